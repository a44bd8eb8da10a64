//! `--gpu-layers` and `--gpu-device`, shared by generation and `constrain serve`: one place
//! decides the defaults and the line printed when a GPU was asked for and none is usable.

/// Where the model runs.
#[derive(clap::Args, Debug, Clone)]
pub struct GpuArgs {
    /// Layers to offload to the GPU: a number, or `all` (0: run on the CPU) [default: all in a
    /// build with the `cuda` feature, else 0]. Without a usable GPU the model runs on the CPU
    /// and one line on stderr says so.
    #[arg(long, value_name = "N|all", value_parser = parse_gpu_layers)]
    pub gpu_layers: Option<u32>,
    /// The GPU to run on, by its position among the machine's GPUs (0 is the first; CUDA's
    /// order, so CUDA_VISIBLE_DEVICES applies) [default: 0].
    #[arg(long, value_name = "N")]
    pub gpu_device: Option<usize>,
}

/// `N` or `all` of `--gpu-layers` (`all` is `u32::MAX`, llama.cpp's "every layer").
fn parse_gpu_layers(text: &str) -> Result<u32, String> {
    if text.eq_ignore_ascii_case("all") {
        return Ok(u32::MAX);
    }
    text.parse::<u32>()
        .map_err(|e| format!("`{text}` is not a number of layers or `all`: {e}"))
}

#[cfg(feature = "llama")]
impl GpuArgs {
    /// The load options these flags ask for.
    pub fn load_options(&self, verbose: bool) -> constrain_llama::LoadOptions {
        constrain_llama::LoadOptions {
            verbose,
            gpu_layers: self
                .gpu_layers
                .unwrap_or_else(constrain_llama::default_gpu_layers),
            gpu_device: self.gpu_device,
        }
    }
}

/// The one line a program prints when GPU layers were asked for and the model runs on the CPU
/// (`None` when it runs where it was asked to).
#[cfg(feature = "llama")]
pub fn fallback_notice(program: &str, placement: &constrain_llama::Placement) -> Option<String> {
    match placement {
        constrain_llama::Placement::CpuFallback(why) => {
            Some(format!("{program}: {why}; running on the CPU"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_layers_are_a_number_or_all() {
        assert_eq!(parse_gpu_layers("0"), Ok(0));
        assert_eq!(parse_gpu_layers("24"), Ok(24));
        assert_eq!(parse_gpu_layers("all"), Ok(u32::MAX));
        assert_eq!(parse_gpu_layers("ALL"), Ok(u32::MAX));
        let err = parse_gpu_layers("-1").unwrap_err();
        assert!(
            err.starts_with("`-1` is not a number of layers or `all`"),
            "{err}"
        );
    }

    #[cfg(feature = "llama")]
    #[test]
    fn only_a_fallback_gets_a_notice() {
        use constrain_llama::{NoGpu, Placement};
        assert_eq!(fallback_notice("constrain", &Placement::Cpu), None);
        assert_eq!(
            fallback_notice("constrain", &Placement::CpuFallback(NoGpu::NoDevice)).as_deref(),
            Some("constrain: no usable CUDA device (no GPU or no driver); running on the CPU")
        );
    }
}
