#pragma once

// NVRTC, loaded with dlopen on first use instead of linked. Only a compile needs it, and loading
// it (a 109 MB library, 240,000 relocations and its initialisers) takes 7 to 9 ms of CPU, which
// every process of the grader paid at its start: the grade's own process, a batch's, `grader
// serve` and its lanes, the worker, the compile. Each now pays where it compiles or asks NVRTC's
// version. The library is the one the build linked against, found as a linked one would be
// (through the grader's DT_RPATH, then the loader's own search).

#include <nvrtc.h>

#include <filesystem>
#include <optional>

namespace grader {

// Function pointers with the ABI nvrtc.h declares.
struct NvrtcApi {
    decltype(&::nvrtcVersion) nvrtcVersion = nullptr;
    decltype(&::nvrtcGetErrorString) nvrtcGetErrorString = nullptr;
    decltype(&::nvrtcCreateProgram) nvrtcCreateProgram = nullptr;
    decltype(&::nvrtcDestroyProgram) nvrtcDestroyProgram = nullptr;
    decltype(&::nvrtcAddNameExpression) nvrtcAddNameExpression = nullptr;
    decltype(&::nvrtcCompileProgram) nvrtcCompileProgram = nullptr;
    decltype(&::nvrtcGetLoweredName) nvrtcGetLoweredName = nullptr;
    decltype(&::nvrtcGetProgramLogSize) nvrtcGetProgramLogSize = nullptr;
    decltype(&::nvrtcGetProgramLog) nvrtcGetProgramLog = nullptr;
    decltype(&::nvrtcGetPTXSize) nvrtcGetPTXSize = nullptr;
    decltype(&::nvrtcGetPTX) nvrtcGetPTX = nullptr;
    decltype(&::nvrtcGetCUBINSize) nvrtcGetCUBINSize = nullptr;
    decltype(&::nvrtcGetCUBIN) nvrtcGetCUBIN = nullptr;
};

// NVRTC's functions, loaded once per process. Thread-safe. Throws NvrtcError (the machine's
// fault: what to install or rebuild) where the library cannot be loaded or lacks a function, the
// same error to every caller.
const NvrtcApi& nvrtc();

// The library the grader loads: the soname of the one the build found ("libnvrtc.so.13").
const char* nvrtc_library_name();

// The file nvrtc() loads, without loading it: the soname in the folder of the grader's run path,
// which the loader searches before anything else (a DT_RPATH, before LD_LIBRARY_PATH), or
// $GRADER_LIBNVRTC where set. None where the grader has no run path (a toolkit in the loader's
// own folders) or the file is not there.
std::optional<std::filesystem::path> nvrtc_library_file();

}  // namespace grader
