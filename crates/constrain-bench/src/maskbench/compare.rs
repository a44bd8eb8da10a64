//! `constrain bench maskbench-compare`: two MaskBench results, schema by schema.
//!
//! A summary table hides trade-offs (a faster engine that passes other schemas); this lists
//! the schemas whose outcome differs, grouped by status, the summaries side by side, and the
//! schemas where our times are furthest from the reference.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use super::report::{Distribution, SchemaRecord, Summary};

/// Arguments of `constrain bench maskbench-compare`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The reference results (`.jsonl`); its summary `.json` beside it is read when present.
    #[arg(long, value_name = "ANCHOR.jsonl")]
    anchor: PathBuf,
    /// Our results (`PREFIX.jsonl` of `constrain bench maskbench`).
    #[arg(long, value_name = "PREFIX.jsonl")]
    ours: PathBuf,
    /// Schemas listed per group and in the largest-gap lists.
    #[arg(long, value_name = "N", default_value_t = 20)]
    list: usize,
}

/// One side of the comparison.
struct Results {
    records: BTreeMap<String, SchemaRecord>,
    summary: Option<Summary>,
}

impl Results {
    fn load(jsonl: &Path) -> anyhow::Result<Results> {
        let text = std::fs::read_to_string(jsonl)
            .with_context(|| format!("reading {}", jsonl.display()))?;
        let mut records = BTreeMap::new();
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let record: SchemaRecord = serde_json::from_str(line)
                .with_context(|| format!("{}:{}: not a schema record", jsonl.display(), i + 1))?;
            records.insert(record.id.clone(), record);
        }
        let summary_path = jsonl.with_extension("json");
        let summary = match std::fs::read_to_string(&summary_path) {
            Ok(text) => Some(
                serde_json::from_str(&text)
                    .with_context(|| format!("{}: not a summary", summary_path.display()))?,
            ),
            Err(_) => None,
        };
        Ok(Results { records, summary })
    }

    /// The summary over `ids`: the written one when it covers exactly these schemas, otherwise
    /// recomputed from the records (token-time percentiles then cannot be known: only the
    /// average and maximum are filled in).
    fn summary_over(&self, ids: &BTreeSet<&String>) -> (Summary, bool) {
        if let Some(summary) = &self.summary {
            if summary.schemas == ids.len() && self.records.len() == ids.len() {
                return (summary.clone(), true);
            }
        }
        let mut summary = Summary::default();
        let mut ttfm_ns = Vec::new();
        let mut mask_us_total = 0.0;
        for id in ids {
            let record = &self.records[*id];
            summary.count(record);
            if record.status != "compile_error" && record.status != "load_error" {
                ttfm_ns.push((record.ttfm_us * 1000.0).round() as u64);
            }
            mask_us_total += record.mask_us_total;
            summary.tbm_us.max = summary.tbm_us.max.max(record.max_mask_us);
        }
        summary.ttfm_us = Distribution::from_nanos(&mut ttfm_ns);
        if summary.tokens > 0 {
            summary.tbm_us.avg = mask_us_total / summary.tokens as f64;
        }
        (summary, false)
    }
}

/// Prints the comparison; exits with 1 when we accept an invalid instance the reference does
/// not, or crash.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let anchor = Results::load(&args.anchor)?;
    let ours = Results::load(&args.ours)?;
    let common: BTreeSet<&String> = anchor
        .records
        .keys()
        .filter(|id| ours.records.contains_key(*id))
        .collect();
    anyhow::ensure!(
        !common.is_empty(),
        "the two result files have no schema in common"
    );

    let (anchor_summary, anchor_full) = anchor.summary_over(&common);
    let (our_summary, ours_full) = ours.summary_over(&common);
    print_summaries(
        &anchor_summary,
        &our_summary,
        anchor_full && ours_full,
        common.len(),
    );

    let pairs: Vec<(&SchemaRecord, &SchemaRecord)> = common
        .iter()
        .map(|id| (&anchor.records[*id], &ours.records[*id]))
        .collect();
    print_transitions(&pairs);
    print_differences(&pairs, args.list);
    print_token_mismatches(&pairs, args.list);
    print_largest_gaps(&pairs, args.list);
    print_unmatched(&anchor, &ours);

    let regressions = pairs
        .iter()
        .filter(|(a, o)| {
            (o.status == "invalidation_error" && a.status != "invalidation_error")
                || (o.status == "crash" && a.status != "crash")
        })
        .count();
    Ok(if regressions == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn print_summaries(anchor: &Summary, ours: &Summary, full: bool, n: usize) {
    let name = |s: &Summary, default: &'static str| {
        if s.engine.is_empty() {
            default.to_string()
        } else {
            s.engine.clone()
        }
    };
    println!("== Summary over {n} schemas in both files");
    println!(
        "{:<26}{:>16}{:>16}{:>12}",
        "",
        name(anchor, "anchor"),
        name(ours, "ours"),
        "ours/anchor"
    );
    for ((label, a), (_, o)) in anchor.count_rows().into_iter().zip(ours.count_rows()) {
        if label == "wall_s" && !full {
            continue;
        }
        print_row(label, a, o);
    }
    for (prefix, a_dist, o_dist) in [
        ("tbm_us", &anchor.tbm_us, &ours.tbm_us),
        ("ttfm_us", &anchor.ttfm_us, &ours.ttfm_us),
    ] {
        for ((label, a), (_, o)) in a_dist.rows().into_iter().zip(o_dist.rows()) {
            let known = full || prefix == "ttfm_us" || matches!(label, "avg" | "max");
            if known {
                print_row(&format!("{prefix} {label}"), a, o);
            }
        }
    }
    if !full {
        println!("(token-time percentiles need every sample: rerun both over the same schemas)");
    }
}

fn print_row(label: &str, anchor: f64, ours: f64) {
    let ratio = if anchor != 0.0 {
        format!("{:.2}", ours / anchor)
    } else {
        "-".to_string()
    };
    let fmt = |v: f64| {
        if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.3}")
        }
    };
    println!("{label:<26}{:>16}{:>16}{ratio:>12}", fmt(anchor), fmt(ours));
}

fn print_transitions(pairs: &[(&SchemaRecord, &SchemaRecord)]) {
    let mut counts: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (a, o) in pairs {
        *counts
            .entry((a.status.as_str(), o.status.as_str()))
            .or_default() += 1;
    }
    println!("\n== Status, anchor -> ours");
    for ((a, o), n) in counts {
        let mark = if a == o { " " } else { "*" };
        println!("{mark} {a:>20} -> {o:<20}{n:>7}");
    }
}

fn print_differences(pairs: &[(&SchemaRecord, &SchemaRecord)], list: usize) {
    let mut we_fail: BTreeMap<&str, Vec<&SchemaRecord>> = BTreeMap::new();
    let mut we_pass: BTreeMap<&str, Vec<&SchemaRecord>> = BTreeMap::new();
    for (a, o) in pairs {
        match (a.status == "pass", o.status == "pass") {
            (true, false) => we_fail.entry(o.status.as_str()).or_default().push(o),
            (false, true) => we_pass.entry(a.status.as_str()).or_default().push(a),
            _ => {}
        }
    }
    let total =
        |groups: &BTreeMap<&str, Vec<&SchemaRecord>>| groups.values().map(Vec::len).sum::<usize>();
    println!("\n== The anchor passes, we fail: {}", total(&we_fail));
    print_groups(&we_fail, list, "our");
    println!("\n== We pass, the anchor fails: {}", total(&we_pass));
    print_groups(&we_pass, list, "anchor's");
}

fn print_groups(groups: &BTreeMap<&str, Vec<&SchemaRecord>>, list: usize, whose: &str) {
    for (status, records) in groups {
        println!("  {status} ({}), with {whose} error:", records.len());
        for record in records.iter().take(list) {
            println!(
                "    {}: {}",
                record.id,
                one_line(record.error.as_deref().unwrap_or("-"), 140)
            );
        }
        if records.len() > list {
            println!("    ... {} more", records.len() - list);
        }
    }
}

fn print_token_mismatches(pairs: &[(&SchemaRecord, &SchemaRecord)], list: usize) {
    let mismatched: Vec<_> = pairs
        .iter()
        .filter(|(a, o)| a.status == "pass" && o.status == "pass" && a.tokens != o.tokens)
        .collect();
    println!(
        "\n== Both pass with different token counts (the instance text or its tokens differ, or an \
         invalid instance is rejected at another token): {}",
        mismatched.len()
    );
    for (a, o) in mismatched.iter().take(list) {
        println!(
            "    {}: anchor {} tokens, ours {}",
            a.id, a.tokens, o.tokens
        );
    }
}

fn print_largest_gaps(pairs: &[(&SchemaRecord, &SchemaRecord)], list: usize) {
    let compiled = |r: &SchemaRecord| {
        r.status != "compile_error" && r.status != "load_error" && r.status != "crash"
    };
    let both: Vec<_> = pairs
        .iter()
        .filter(|(a, o)| compiled(a) && compiled(o))
        .collect();
    let mut ttfm: Vec<_> = both
        .iter()
        .map(|(a, o)| (o.ttfm_us / a.ttfm_us.max(1.0), a, o))
        .collect();
    ttfm.sort_by(|x, y| y.0.total_cmp(&x.0));
    println!("\n== Largest time-to-first-mask ratios (ours/anchor)");
    for (ratio, a, o) in ttfm.iter().take(list) {
        println!(
            "    {:>8.1}x {}: {:.0} us vs {:.0} us",
            ratio, a.id, o.ttfm_us, a.ttfm_us
        );
    }
    let mut max_mask: Vec<_> = both
        .iter()
        .filter(|(a, o)| a.tokens > 0 && o.tokens > 0)
        .map(|(a, o)| (o.max_mask_us / a.max_mask_us.max(1.0), a, o))
        .collect();
    max_mask.sort_by(|x, y| y.0.total_cmp(&x.0));
    println!("\n== Largest max-mask-time ratios (ours/anchor)");
    for (ratio, a, o) in max_mask.iter().take(list) {
        println!(
            "    {:>8.1}x {}: {:.0} us vs {:.0} us",
            ratio, a.id, o.max_mask_us, a.max_mask_us
        );
    }
}

fn print_unmatched(anchor: &Results, ours: &Results) {
    let only_anchor = anchor
        .records
        .keys()
        .filter(|id| !ours.records.contains_key(*id))
        .count();
    let only_ours = ours
        .records
        .keys()
        .filter(|id| !anchor.records.contains_key(*id))
        .count();
    if only_anchor + only_ours > 0 {
        println!(
            "\n== Not compared: {only_anchor} schemas only in the anchor, {only_ours} only in ours"
        );
    }
}

fn one_line(text: &str, max_chars: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match flat.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}...", &flat[..cut]),
        None => flat,
    }
}
