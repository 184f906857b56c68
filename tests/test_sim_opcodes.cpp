// The simulator's PTX vocabulary as a unit: opcodes.def's table of opcodes and the modifier chain
// every decoder reads its opcode's modifiers through.

#include <doctest/doctest.h>

#include <string_view>
#include <vector>

#include "sim/program.hpp"
#include "sim/ptx_decode.hpp"
#include "sim/ptx_parser.hpp"
#include "sim/sim.hpp"

using namespace grader::sim::detail;

TEST_CASE("an opcode's chain splits into its base, its types and its modifiers, in order") {
    const ModifierChain chain("cvt.rn.sat.f32.s32");
    CHECK(chain.base() == "cvt");
    REQUIRE(chain.types().size() == 2);
    CHECK(chain.types()[0] == Type::f32);
    CHECK(chain.types()[1] == Type::s32);
    CHECK(chain.has("rn"));
    CHECK(chain.has("sat"));
    CHECK_FALSE(chain.has("f32"));  // a type is no modifier
    CHECK(chain.only({"rn", "sat", "ftz"}));
    CHECK_FALSE(chain.only({"rn"}));
    CHECK(ModifierChain("bar").empty());
}

TEST_CASE("a type the simulator does not execute makes the instruction unsupported") {
    CHECK_THROWS_AS(ModifierChain("add.rn.f16"), Unsupported);
    CHECK_THROWS_AS(ModifierChain("mov.b128"), Unsupported);
}

TEST_CASE("a chain is asked by table: the last or first written, or the table's priority") {
    const ModifierChain chain("atom.shared.add.global.u32");
    const ModifierChain::Table<Space> spaces = {{"global", Space::global},
                                                {"shared", Space::shared}};
    Space space = Space::generic;
    CHECK(chain.last_written(spaces, space));
    CHECK(space == Space::global);
    CHECK(chain.first_written(spaces, space));
    CHECK(space == Space::shared);
    Space unchanged = Space::local;
    CHECK_FALSE(ModifierChain("ld.u32").last_written(spaces, unchanged));
    CHECK(unchanged == Space::local);

    const ModifierChain mul("mul.hi.wide.s32");
    Op op = Op::mul_lo;
    CHECK(mul.first_listed<Op>({{"wide", Op::mul_wide}, {"hi", Op::mul_hi}}, op));
    CHECK(op == Op::mul_wide);
    CHECK(ModifierChain::names(spaces, "shared"));
    CHECK_FALSE(ModifierChain::names(spaces, "local"));
}

TEST_CASE("the table knows each opcode's spelling and the operation it decodes to") {
    const OpcodeRow* ldu = opcode_row("ldu");
    REQUIRE(ldu != nullptr);
    CHECK(ldu->op == Op::ld);
    CHECK((ldu->decoder == opcode_row("st")->decoder));
    REQUIRE(opcode_row("red") != nullptr);
    CHECK(opcode_row("red")->op == Op::atom);
    REQUIRE(opcode_row("call") != nullptr);
    CHECK((opcode_row("call")->decoder == &decode_call));
    for (const std::string_view known : {"mov", "setp", "activemask", "bar", "exit", "pmevent"})
        CHECK_MESSAGE(opcode_row(known) != nullptr, known);
    // Opcodes whose operand syntax the parser does not know are not parsed at all.
    for (const std::string_view unknown : {"tex", "suld", "wmma", "", "ld.global"})
        CHECK_MESSAGE(opcode_row(unknown) == nullptr, unknown);
}
