//! Naming tokens on the command line: by index or by label.

use anyhow::{bail, Context};

/// The tokens of the command: their labels (or indices as labels).
pub struct TokenNames {
    labels: Vec<String>,
}

impl TokenNames {
    /// Names for `width` tokens: the given labels, or `0`, `1`, ... when there are none.
    pub fn new(labels: &[String], width: usize) -> anyhow::Result<Self> {
        if labels.is_empty() {
            return Ok(TokenNames {
                labels: (0..width).map(|i| i.to_string()).collect(),
            });
        }
        if labels.len() != width {
            bail!(
                "{} labels for {} logits: give one label per logit",
                labels.len(),
                width
            );
        }
        Ok(TokenNames {
            labels: labels.to_vec(),
        })
    }

    /// The labels, by token.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// The token a label or an index names (a label wins over an index that looks the same).
    pub fn resolve(&self, name: &str) -> anyhow::Result<u32> {
        let name = name.trim();
        if let Some(token) = self.labels.iter().position(|label| label == name) {
            return Ok(token as u32);
        }
        match name.parse::<usize>() {
            Ok(token) if token < self.labels.len() => Ok(token as u32),
            Ok(token) => bail!(
                "token {token} is out of range: there are {} logits",
                self.labels.len()
            ),
            Err(_) => bail!(
                "unknown token {name:?}: not a label ({}) nor an index",
                self.labels.join(", ")
            ),
        }
    }

    /// Every name of a list.
    pub fn resolve_all(&self, names: &[String]) -> anyhow::Result<Vec<u32>> {
        names.iter().map(|name| self.resolve(name)).collect()
    }

    /// `TOKEN=BIAS` pairs.
    pub fn resolve_bias(&self, entries: &[String]) -> anyhow::Result<Vec<(u32, f32)>> {
        entries
            .iter()
            .map(|entry| {
                let (name, bias) = entry
                    .rsplit_once('=')
                    .with_context(|| format!("logit bias {entry:?} is not TOKEN=BIAS"))?;
                let bias: f32 = bias
                    .trim()
                    .parse()
                    .with_context(|| format!("logit bias {entry:?}: {bias:?} is not a number"))?;
                Ok((self.resolve(name)?, bias))
            })
            .collect()
    }

    /// The grammar mask (bit `j % 32` of word `j / 32`) that allows exactly these tokens.
    pub fn mask(&self, allowed: &[u32]) -> Vec<u32> {
        let mut words = vec![0u32; self.labels.len().div_ceil(32)];
        for &token in allowed {
            words[token as usize / 32] |= 1 << (token % 32);
        }
        words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> TokenNames {
        let labels: Vec<String> = ["mat", "sofa", "3"].iter().map(|s| s.to_string()).collect();
        TokenNames::new(&labels, 3).unwrap()
    }

    #[test]
    fn labels_and_indices_name_tokens() {
        let names = names();
        assert_eq!(names.resolve("sofa").unwrap(), 1);
        assert_eq!(names.resolve("0").unwrap(), 0);
        assert_eq!(names.resolve("3").unwrap(), 2); // the label, not the index
        assert!(names.resolve("7").is_err());
        assert!(names.resolve("moon").is_err());
        assert!(TokenNames::new(&["a".into()], 3).is_err());
    }

    #[test]
    fn bias_and_mask() {
        let names = names();
        let bias = names
            .resolve_bias(&["mat=-inf".into(), "1=2.5".into()])
            .unwrap();
        assert_eq!(bias, [(0, f32::NEG_INFINITY), (1, 2.5)]);
        assert!(names.resolve_bias(&["mat".into()]).is_err());
        assert!(names.resolve_bias(&["mat=lots".into()]).is_err());
        assert_eq!(names.mask(&[0, 2]), [0b101]);
    }
}
