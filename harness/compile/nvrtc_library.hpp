#pragma once

// NVRTC loads its builtins library (libnvrtc-builtins.so.MAJOR.MINOR) itself, with dlopen, at the
// first compile. That dlopen searches the loader's configuration, not the grader's RUNPATH, so on
// a machine where CUDA's library folder is not in ld.so.conf (NVIDIA's runfile installer leaves
// that step to the user) every compile fails with NVRTC_ERROR_BUILTIN_OPERATION_FAILURE.
// Loading the builtins first, by absolute path from the folder libnvrtc itself was loaded from,
// makes NVRTC's own dlopen find the library already in the process (glibc matches a loaded
// library's soname). It is also what a confined compiler must do before it gives up the right to
// open files.

#include <string>

namespace grader {

struct NvrtcBuiltins {
    bool loaded = false;
    std::string path;   // what was loaded: an absolute path, or the bare name the loader found
    std::string error;  // why nothing was loaded: dlerror()'s text for each place tried
};

// Loads the builtins once per process; later calls return the first outcome. Thread-safe.
const NvrtcBuiltins& load_nvrtc_builtins();

// The folder the running libnvrtc was loaded from
// ("/usr/local/cuda-13.0/targets/x86_64-linux/lib"), where its builtins library must be; empty
// where the loader cannot say.
std::string nvrtc_library_folder();

// "libnvrtc-builtins.so.13.0" for the NVRTC in use.
std::string nvrtc_builtins_name();

}  // namespace grader
