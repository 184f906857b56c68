#pragma once

// What a cubin (the ELF image NVRTC's ptxas makes beside the PTX) says of a kernel that the PTX
// does not, read without a GPU.

#include <optional>
#include <string_view>

namespace grader {

// The registers per thread ptxas gave `lowered_name`, as cuFuncGetAttribute's
// CU_FUNC_ATTRIBUTE_NUM_REGS reads them once it is loaded (ptxas's "Used N registers"): the top
// byte of the sh_info of the kernel's .text section. nullopt where the bytes are not a 64-bit ELF
// cubin with that kernel's code.
std::optional<int> cubin_registers(std::string_view cubin, std::string_view lowered_name);

}  // namespace grader
