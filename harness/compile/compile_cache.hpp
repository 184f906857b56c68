#pragma once

// The exercise's own kernels compile to the same PTX and cubin in every grade on a machine: a
// cache keyed by everything the result depends on (the source and its headers, the kernel's
// name, the options, the arch, NVRTC's version and the grader executable itself) lets a class
// compile them once. Only trusted requests (vet == false, the harness's own) are cached: a
// student's source is never stored or looked up.

#include <filesystem>
#include <optional>
#include <string>

#include "compile/compile.hpp"

namespace grader {

// Where the cache lives: $GRADER_CACHE_DIR (the value "off" turns the cache off), else
// $XDG_CACHE_HOME/grader/kernels, else $HOME/.cache/grader/kernels; none without either.
std::optional<std::filesystem::path> default_compile_cache_dir();

// NVRTC's version ("13.0"), as nvrtc_version() asks it, without loading NVRTC where this cache
// has seen the library before: kept in `cache_dir` under the identity of the file the grader
// would load (its path, size, modification time, inode and device). A worker whose kernels all
// come from the cache then never loads NVRTC (7 to 9 ms of CPU a process). Asks NVRTC where
// there is no usable folder or no such file. Throws NvrtcError where NVRTC cannot be loaded.
std::string nvrtc_version_cached(const std::optional<std::filesystem::path>& cache_dir);

// The text every cached result is stored under (compared whole on a hit: a hash collision
// reads as a miss), for the NVRTC of `nvrtc_version`.
std::string compile_cache_key(const CompileRequest& request, const std::string& nvrtc_version);

// compile_kernel(request), through the cache in `cache_dir` where the request is trusted and the
// folder is usable (created where missing; owned by this user and writable by no one else, or
// it is not used). A miss or an unreadable entry compiles; a successful compile is stored
// (written whole under a temporary name, then renamed). `hit`, where given, says which it was.
CompiledKernel compile_kernel_cached(const CompileRequest& request,
                                     const std::optional<std::filesystem::path>& cache_dir,
                                     bool* hit = nullptr);

}  // namespace grader
