//! Where a model's layers run: which GPU, how many layers, and the CPU when no GPU is usable.
//!
//! A build with the `cuda` feature offloads every layer by default. The same binary must still
//! run on a machine without a GPU (or without a driver): there the placement falls back to the
//! CPU and says why, so that the caller can print one line about it instead of failing.

use std::fmt;

use llama_cpp_2::{list_llama_ggml_backend_devices, LlamaBackendDeviceType};

use crate::LlamaError;

/// Layers offloaded when the caller names no number: every layer in a build with a GPU backend
/// (`u32::MAX` means "all" to llama.cpp), none otherwise.
pub const fn default_gpu_layers() -> u32 {
    if cfg!(feature = "cuda") {
        u32::MAX
    } else {
        0
    }
}

/// A GPU that llama.cpp can offload layers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuDevice {
    /// Its position among the GPUs (0 is the first, in the driver's order), as `--gpu-device`
    /// names it.
    pub index: usize,
    /// llama.cpp's name of the device, e.g. `CUDA0`.
    pub name: String,
    /// The device's own description, e.g. `NVIDIA H200`.
    pub description: String,
    /// Its memory in bytes.
    pub memory_total: usize,
    /// Its free memory in bytes when it was listed.
    pub memory_free: usize,
    /// llama.cpp's index of the device among all of its devices (the CPU included).
    pub(crate) backend_index: usize,
}

/// Why layers that were asked for on a GPU run on the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoGpu {
    /// The binary was built without a GPU backend (no `cuda` feature).
    NotBuilt,
    /// The GPU backend found no device: no GPU, or no driver to reach it.
    NoDevice,
}

impl fmt::Display for NoGpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoGpu::NotBuilt => {
                f.write_str("this build has no GPU backend (build it with --features cuda)")
            }
            NoGpu::NoDevice => f.write_str("no usable CUDA device (no GPU or no driver)"),
        }
    }
}

/// Where a loaded model's layers run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// On the CPU, as asked (no GPU layers).
    Cpu,
    /// On the CPU although GPU layers were asked for.
    CpuFallback(NoGpu),
    /// Up to `layers` layers on `device` (`u32::MAX`: all of them), the rest on the CPU.
    Gpu {
        /// The GPU.
        device: GpuDevice,
        /// The layers asked for.
        layers: u32,
    },
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Placement::Cpu => f.write_str("CPU"),
            Placement::CpuFallback(why) => write!(f, "CPU, {why}"),
            Placement::Gpu { device, layers } => {
                write!(
                    f,
                    "GPU {} ({}, {})",
                    device.index, device.name, device.description
                )?;
                if *layers == u32::MAX {
                    f.write_str(", all layers")
                } else {
                    write!(f, ", up to {layers} layers")
                }
            }
        }
    }
}

/// The GPUs that llama.cpp's backends found, in order. Empty in a build without a GPU backend
/// and on a machine without a usable GPU. The backend must be initialized first.
pub(crate) fn gpu_devices() -> Vec<GpuDevice> {
    list_llama_ggml_backend_devices()
        .into_iter()
        .filter(|d| {
            matches!(
                d.device_type,
                LlamaBackendDeviceType::Gpu | LlamaBackendDeviceType::IntegratedGpu
            )
        })
        .enumerate()
        .map(|(index, d)| GpuDevice {
            index,
            name: d.name,
            description: d.description,
            memory_total: d.memory_total,
            memory_free: d.memory_free,
            backend_index: d.index,
        })
        .collect()
}

/// Decides the placement for `gpu_layers` layers on the GPU `device` (the first when `None`)
/// among `devices`. A device index past the last GPU is an error; no GPU at all is a fallback.
pub(crate) fn place(
    gpu_layers: u32,
    device: Option<usize>,
    devices: Vec<GpuDevice>,
) -> Result<Placement, LlamaError> {
    if gpu_layers == 0 {
        return Ok(Placement::Cpu);
    }
    if devices.is_empty() {
        let why = if cfg!(feature = "cuda") {
            NoGpu::NoDevice
        } else {
            NoGpu::NotBuilt
        };
        return Ok(Placement::CpuFallback(why));
    }
    let available = devices.len();
    let index = device.unwrap_or(0);
    let device = devices
        .into_iter()
        .nth(index)
        .ok_or(LlamaError::GpuDeviceNotFound { index, available })?;
    Ok(Placement::Gpu {
        device,
        layers: gpu_layers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(index: usize) -> GpuDevice {
        GpuDevice {
            index,
            name: format!("CUDA{index}"),
            description: "a GPU".into(),
            memory_total: 1 << 30,
            memory_free: 1 << 29,
            backend_index: index + 1,
        }
    }

    #[test]
    fn no_gpu_layers_is_the_cpu_whatever_the_devices() {
        assert_eq!(place(0, None, vec![device(0)]).unwrap(), Placement::Cpu);
        assert_eq!(place(0, Some(3), vec![]).unwrap(), Placement::Cpu);
    }

    #[test]
    fn gpu_layers_without_a_gpu_fall_back_to_the_cpu() {
        let placement = place(u32::MAX, None, vec![]).unwrap();
        let expected = if cfg!(feature = "cuda") {
            NoGpu::NoDevice
        } else {
            NoGpu::NotBuilt
        };
        assert_eq!(placement, Placement::CpuFallback(expected));
        // A device named on a machine without any is the same fallback, not an error.
        assert_eq!(place(8, Some(1), vec![]).unwrap(), placement);
    }

    #[test]
    fn the_first_gpu_unless_one_is_named() {
        let devices = vec![device(0), device(1)];
        match place(u32::MAX, None, devices.clone()).unwrap() {
            Placement::Gpu { device, layers } => {
                assert_eq!((device.index, layers), (0, u32::MAX));
            }
            other => panic!("expected a GPU placement, got {other:?}"),
        }
        match place(12, Some(1), devices).unwrap() {
            Placement::Gpu { device, layers } => {
                assert_eq!((device.index, device.backend_index, layers), (1, 2, 12));
            }
            other => panic!("expected a GPU placement, got {other:?}"),
        }
    }

    #[test]
    fn a_device_past_the_last_gpu_is_an_error_that_names_the_count() {
        let err = place(1, Some(2), vec![device(0), device(1)]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no GPU 2: this machine has 2 (numbered from 0)"
        );
    }

    #[test]
    fn placements_read_as_one_phrase() {
        let gpu = Placement::Gpu {
            device: device(0),
            layers: u32::MAX,
        };
        assert_eq!(gpu.to_string(), "GPU 0 (CUDA0, a GPU), all layers");
        assert_eq!(
            Placement::CpuFallback(NoGpu::NoDevice).to_string(),
            "CPU, no usable CUDA device (no GPU or no driver)"
        );
    }
}
