# lit configuration for tbc: .mlir/.json/.toml tests under test/ plus the
# GoogleTest binaries under test/unit (run through lit's googletest format).
import os
import lit.formats

config.name = "tbc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs", "unit", "fixtures",
                   "fixtures-bf16"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tbc_obj_root, "test")

tools_path = os.path.join(config.tbc_obj_root, "bin")
config.environment["PATH"] = os.pathsep.join(
    [tools_path, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.substitutions.append(("%tbc_src", config.tbc_src_root))
config.substitutions.append(("%examples", os.path.join(config.tbc_src_root, "examples")))

# Under ASan+UBSan (scripts/test-sanitizers.sh) memory use is ASan's:
# shadow memory and the quarantine of freed blocks.
if config.tbc_sanitize.upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("asan")

# The Python package (build/python), run by the interpreter it was built for.
if config.tbc_python:
    config.available_features.add("python-package")
    config.substitutions.append(("%tbc_python", config.tbc_python))
    config.substitutions.append(("%tbc_pkg_dir", os.path.join(config.tbc_obj_root, "python")))

# The CUDA path is checked without a GPU: ptxas assembles every PTX the
# backend writes (CUDA's toolkit, /usr/local/cuda on every build machine).
cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
config.substitutions.append(("%cuda_home", cuda_home))
ptxas = os.path.join(cuda_home, "bin", "ptxas")
if os.access(ptxas, os.X_OK):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
# Code for named x86 CPUs (--cpu znver3) is compiled and run on x86-64 only.
import platform
if platform.machine() in ("x86_64", "AMD64"):
    config.available_features.add("x86_64")
    # Code using AVX512-BF16 (--cpu-dot bf16) runs only where the CPU has it.
    try:
        with open("/proc/cpuinfo") as f:
            cpuinfo = f.read()
            if " avx512_bf16" in cpuinfo:
                config.available_features.add("avx512bf16")
            # AMX's tiles (--cpu-dot amx): Sapphire Rapids and later.
            if " amx_tile" in cpuinfo and " amx_bf16" in cpuinfo:
                config.available_features.add("amx")
    except OSError:
        pass
# Tensor-core instructions are read from the machine code: cuobjdump (part
# of a full CUDA toolkit) or nvdisasm ($TBC_NVDISASM, e.g. from PyPI's
# nvidia-cuda-nvdisasm). Without either, the SASS test is unsupported.
import shutil
cuda_bin = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin")
for tool in [os.environ.get("TBC_NVDISASM", ""), os.path.join(cuda_bin, "cuobjdump"),
             shutil.which("cuobjdump") or "", os.path.join(cuda_bin, "nvdisasm"),
             shutil.which("nvdisasm") or ""]:
    if tool and os.access(tool, os.X_OK):
        config.available_features.add("sass")
        config.substitutions.append(("%sass_or_none", tool))
        config.substitutions.append(("%sass", tool))
        break
else:
    config.substitutions.append(("%sass_or_none", '""'))
# A machine with an NVIDIA driver and a GPU runs CUDA modules instead of
# refusing them.
import ctypes
try:
    if ctypes.CDLL("libcuda.so.1").cuInit(0) == 0:
        config.available_features.add("cuda-gpu")
except OSError:
    pass
# `tbc verify` runs transformers: with a Python that has torch and
# transformers ($TBC_VERIFY_PYTHON, else python3), its tests run; CI has
# neither (they are never a dependency of tbc), so there they are unsupported.
import subprocess
verify_python = os.environ.get("TBC_VERIFY_PYTHON", "python3")
try:
    if subprocess.run([verify_python, "-c", "import numpy, torch, transformers"],
                      capture_output=True, timeout=120).returncode == 0:
        config.available_features.add("transformers")
        config.substitutions.append(("%verify_python", verify_python))
except (OSError, subprocess.TimeoutExpired):
    pass
