// PTX text to the decoded Program. Handles what NVRTC emits (module variables, entries with
// .reg/.local/.shared declarations, .loc/.file line information, labels, predicated
// instructions); .func bodies are skipped because calls are not executed.

#include "sim/ptx_parser.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/program.hpp"
#include "sim/sim.hpp"
#include "text/text_safety.hpp"

namespace grader::sim {

ParseError::ParseError(int line, std::string message)
    : std::runtime_error("PTX line " + std::to_string(line) + ": " + message),
      line_(line),
      message_(std::move(message)) {}

namespace detail {

Program Parser::parse() {
    while (peek().kind != TokenKind::end)
        top_level();
    for (std::size_t e = 0; e < program_.entries.size(); ++e)
        finish_entry(e);
    return std::move(program_);
}

void Parser::top_level() {
    const Token& t = peek();
    if (t.text == ".version" || t.text == ".target" || t.text == ".address_size") {
        skip_line(t.line);
        return;
    }
    if (t.text == ".file") {
        file_directive();
        return;
    }
    if (t.text == ".loc") {
        skip_line(t.line);
        return;
    }
    if (t.text == ".section") {
        next();
        while (!at("{"))
            next();
        skip_braced_block();
        return;
    }
    if (t.text == ".pragma") {
        skip_to_semicolon();
        return;
    }
    // A declaration: a variable, a function prototype, or an entry/function with a body.
    const std::size_t start = pos_;
    bool is_function = false;
    bool is_entry = false;
    int paren = 0;
    while (true) {
        const Token& u = peek();
        if (u.kind == TokenKind::end)
            throw ParseError(u.line, "unexpected end of PTX");
        if (u.text == ".entry")
            is_entry = is_function = true;
        if (u.text == ".func")
            is_function = true;
        if (u.kind == TokenKind::punct) {
            if (u.text == "(")
                ++paren;
            if (u.text == ")")
                --paren;
            if (paren == 0 && (u.text == ";" || u.text == "{" || u.text == "="))
                break;
        }
        next();
    }
    if (is_function) {
        if (at(";")) {
            next();  // a prototype, e.g. of vprintf
            return;
        }
        if (at("="))
            throw ParseError(peek().line, "'=' in a function declaration");
        if (!is_entry) {
            skip_braced_block();  // device functions are not executed (no call support)
            return;
        }
        entry(start);
        return;
    }
    const std::size_t end = pos_;
    variable(start, end, -1);
}

void Parser::entry(std::size_t start) {
    program_.entries.emplace_back();
    entry_ = &program_.entries.back();
    entry_index_ = static_cast<int>(program_.entries.size() - 1);
    registers_.clear();
    constant_slots_.clear();
    labels_.clear();
    pending_branches_.clear();
    location_files_.clear();
    loc_file_ = loc_line_ = loc_column_ = 0;

    entry_->special_base = 0;
    for (int k = 0; k < static_cast<int>(Special::count); ++k)
        new_slot(64);
    entry_->sink_slot = new_slot(64);

    // Header: ... .entry NAME ( params ) directives {
    std::size_t k = start;
    while (tokens_[k].text != ".entry")
        ++k;
    ++k;
    entry_->name = std::string(tokens_[k].text);
    ++k;
    if (tokens_[k].text == "(") {
        ++k;
        while (tokens_[k].text != ")") {
            const std::size_t param_start = k;
            while (tokens_[k].text != "," && tokens_[k].text != ")") {
                if (tokens_[k].kind == TokenKind::end) {
                    throw ParseError(tokens_[k].line, "unterminated parameter list");
                }
                ++k;
            }
            param(param_start, k);
            if (tokens_[k].text == ",")
                ++k;
        }
    }
    expect("{");
    body();
    close_entry();
    entry_ = nullptr;
}

void Parser::body() {
    int depth = 1;
    while (true) {
        const Token& t = peek();
        if (t.kind == TokenKind::end)
            throw ParseError(t.line, "unterminated function body");
        if (t.kind == TokenKind::punct && t.text == "{") {
            ++depth;
            next();
            continue;
        }
        if (t.kind == TokenKind::punct && t.text == "}") {
            next();
            if (--depth == 0)
                break;
            continue;
        }
        if (t.text == ".reg") {
            reg_declaration();
        } else if (t.text == ".loc") {
            loc_directive();
        } else if (t.text == ".local" || t.text == ".shared" || t.text == ".global" ||
                   t.text == ".const") {
            const std::size_t start = pos_;
            while (!at(";") && !at("=")) {
                if (peek().kind == TokenKind::end)
                    throw ParseError(t.line, "unterminated declaration");
                next();
            }
            variable(start, pos_, entry_index_);
        } else if (t.text == ".param") {
            call_parameter();
        } else if (t.kind == TokenKind::word && t.text[0] == '.') {
            skip_to_semicolon();  // .pragma and the like
        } else if (t.kind == TokenKind::word && peek(1).text == ":" &&
                   peek(1).kind == TokenKind::punct) {
            labels_[std::string(t.text)] = static_cast<std::uint32_t>(entry_->code.size());
            next();
            next();
        } else {
            instruction();
        }
    }
}

std::int32_t Parser::value_slot(const Operand& op, Type type, int line) {
    switch (op.kind) {
        case Operand::Kind::reg:
            return name_slot(op.name, line);
        case Operand::Kind::immediate: {
            std::uint64_t bits = 0;
            if (!parse_immediate(op.number, op.negative, type, bits)) {
                throw ParseError(line, "malformed number " + std::string(op.number));
            }
            return constant_slot(bits, -1);
        }
        case Operand::Kind::sink:
            return entry_->sink_slot;
        default:
            throw ParseError(line, "expected a register or a number");
    }
}

std::vector<Operand> Parser::operands(std::size_t begin, std::size_t end) {
    std::vector<Operand> result;
    std::size_t k = begin;
    while (k < end) {
        Operand op;
        const Token& t = tokens_[k];
        if (t.text == "[") {
            op.kind = Operand::Kind::address;
            ++k;
            bool negative = false;
            while (k < end && tokens_[k].text != "]") {
                const Token& u = tokens_[k];
                if (u.kind == TokenKind::word) {
                    op.name = u.text;
                } else if (u.kind == TokenKind::number) {
                    std::uint64_t v = 0;
                    if (!parse_integer(u.text, v))
                        throw ParseError(u.line, "malformed offset");
                    op.offset +=
                        negative ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
                    negative = false;
                } else if (u.text == "-") {
                    negative = true;
                } else if (u.text != "+") {
                    throw ParseError(u.line, "malformed address");
                }
                ++k;
            }
            if (k >= end)
                throw ParseError(t.line, "unterminated '['");
            ++k;
        } else if (t.text == "{") {
            op.kind = Operand::Kind::vector;
            ++k;
            while (k < end && tokens_[k].text != "}") {
                if (tokens_[k].text != ",")
                    op.elements.push_back(tokens_[k].text);
                ++k;
            }
            if (k >= end)
                throw ParseError(t.line, "unterminated '{'");
            ++k;
        } else {
            if (t.text == "!") {
                op.negate = true;
                ++k;
            }
            if (k < end && tokens_[k].text == "-") {
                op.negative = true;
                ++k;
            }
            if (k >= end)
                throw ParseError(t.line, "missing operand");
            const Token& u = tokens_[k];
            if (u.kind == TokenKind::number) {
                op.kind = Operand::Kind::immediate;
                op.number = u.text;
            } else if (u.kind == TokenKind::word) {
                op.kind = u.text == "_" ? Operand::Kind::sink : Operand::Kind::reg;
                op.name = u.text;
            } else {
                throw ParseError(u.line, "unexpected '" + std::string(u.text) + "'");
            }
            ++k;
            if (k < end && tokens_[k].text == "|") {
                op.kind = Operand::Kind::pair;
                if (k + 1 >= end)
                    throw ParseError(u.line, "malformed predicate pair");
                op.elements.push_back(tokens_[k + 1].text);
                k += 2;
            }
        }
        result.push_back(std::move(op));
        if (k < end) {
            if (tokens_[k].text != ",") {
                throw ParseError(tokens_[k].line,
                                 "expected ',' before '" + std::string(tokens_[k].text) + "'");
            }
            ++k;
        }
    }
    return result;
}

void Parser::instruction() {
    const Token& first = peek();
    const int line = first.line;
    const char* text_begin = first.text.data();
    Instruction ins;
    if (at("@")) {
        next();
        if (at("!")) {
            next();
            ins.negate_guard = true;
        }
        const Token& g = next();
        if (g.kind != TokenKind::word)
            throw ParseError(line, "malformed guard predicate");
        ins.guard = name_slot(g.text, line);
    }
    const Token& opcode_token = next();
    if (opcode_token.kind != TokenKind::word) {
        throw ParseError(opcode_token.line,
                         "expected an instruction, found '" + std::string(opcode_token.text) + "'");
    }
    const std::size_t operands_begin = pos_;
    while (!at(";")) {
        if (peek().kind == TokenKind::end)
            throw ParseError(line, "instruction without ';'");
        next();
    }
    const std::size_t operands_end = pos_;
    const char* text_end =
        tokens_[operands_end - 1].text.data() + tokens_[operands_end - 1].text.size();
    if (operands_end == operands_begin)
        text_end = opcode_token.text.data() + opcode_token.text.size();
    next();  // ';'

    std::string text;
    bool space = false;
    for (const char* c = text_begin; c < text_end; ++c) {
        if (*c == ' ' || *c == '\t' || *c == '\n' || *c == '\r') {
            space = true;
            continue;
        }
        if (space && !text.empty())
            text += ' ';
        space = false;
        text += *c;
    }

    SourceLocation where;
    where.line = loc_line_;
    where.column = loc_column_;
    where.ptx_line = line;
    // An instruction of the student's inline asm may be as long as they make it.
    where.instruction = text.size() > kMaxLocationInstructionBytes
                            ? text::shorten(text, kMaxLocationInstructionBytes)
                            : std::move(text);
    location_files_.emplace_back(static_cast<int>(entry_->code.size()), loc_file_);

    const std::string opcode(opcode_token.text);
    std::string opcode_note;
    try {
        // An opcode the simulator does not know may have operand syntax it does not know
        // either (tex, suld): it is not parsed.
        if (!known_opcode(opcode))
            throw Unsupported{opcode};
        if (opcode == "call" || opcode.rfind("call.", 0) == 0) {
            call(ins, operands_begin, operands_end);
            throw Decoded{};
        }
        auto ops = operands(operands_begin, operands_end);
        decode(ins, opcode, ops, line);
    } catch (const Decoded&) {
    } catch (const Unsupported& unsupported) {
        opcode_note = unsupported.what;
        const std::int32_t guard = ins.guard;
        const bool negate = ins.negate_guard;
        ins = Instruction{};
        ins.op = Op::unsupported;
        ins.guard = guard;
        ins.negate_guard = negate;
    }
    entry_->code.push_back(ins);
    entry_->locations.push_back(std::move(where));
    entry_->opcodes.push_back(
        opcode_note.empty() || opcode_note == opcode ? opcode : opcode + " (" + opcode_note + ")");
}

// call: only vprintf, whose output the simulator drops (counted in LaunchCounts). Device
// functions NVRTC did not inline are not executed.
void Parser::call(Instruction& ins, std::size_t begin, std::size_t end) {
    int depth = 0;
    std::string_view callee;
    for (std::size_t k = begin; k < end; ++k) {
        const Token& t = tokens_[k];
        if (t.text == "(")
            ++depth;
        if (t.text == ")")
            --depth;
        if (depth == 0 && t.kind == TokenKind::word) {
            callee = t.text;
            break;
        }
    }
    if (callee == "vprintf") {
        ins.op = Op::printf_call;
        return;
    }
    throw Unsupported{"call of " + std::string(callee.empty() ? "a function pointer" : callee)};
}

void Parser::need(const std::vector<Operand>& ops, std::size_t count, int line,
                  const std::string& opcode) {
    if (ops.size() != count) {
        throw ParseError(line, opcode + " takes " + std::to_string(count) + " operands, found " +
                                   std::to_string(ops.size()));
    }
}

void Parser::address(Instruction& ins, const Operand& op, int line) {
    if (op.kind != Operand::Kind::address)
        throw ParseError(line, "expected an address");
    ins.offset = op.offset;
    ins.src[0] = op.name.empty() ? constant_slot(0, -1) : name_slot(op.name, line);
}

void Parser::decode(Instruction& ins, const std::string& opcode, std::vector<Operand>& ops,
                    int line) {
    std::vector<std::string_view> parts;
    {
        std::string_view rest(opcode);
        std::size_t dot = rest.find('.');
        while (dot != std::string_view::npos) {
            parts.push_back(rest.substr(0, dot));
            rest = rest.substr(dot + 1);
            dot = rest.find('.');
        }
        parts.push_back(rest);
    }
    const std::string_view base = parts[0];
    std::vector<Type> types;
    std::vector<std::string_view> mods;
    for (std::size_t k = 1; k < parts.size(); ++k) {
        bool is_type = false;
        const Type t = type_from(parts[k], is_type);
        if (is_type) {
            types.push_back(t);
        } else {
            mods.push_back(parts[k]);
        }
    }
    auto has = [&](std::string_view m) {
        return std::find(mods.begin(), mods.end(), m) != mods.end();
    };
    ins.ftz = has("ftz");
    auto one_type = [&]() {
        if (types.size() != 1)
            throw ParseError(line, opcode + ": expected one type");
        return types[0];
    };
    auto rounding = [&]() {
        for (auto m : mods) {
            if (m == "rn")
                return Rounding::rn;
            if (m == "rz")
                return Rounding::rz;
            if (m == "rm")
                return Rounding::rm;
            if (m == "rp")
                return Rounding::rp;
            if (m == "rni")
                return Rounding::rni;
            if (m == "rzi")
                return Rounding::rzi;
            if (m == "rmi")
                return Rounding::rmi;
            if (m == "rpi")
                return Rounding::rpi;
        }
        return Rounding::none;
    };
    // Modifiers that change nothing in a functional simulation.
    auto only_mods = [&](std::initializer_list<std::string_view> allowed) {
        for (auto m : mods) {
            if (std::find(allowed.begin(), allowed.end(), m) == allowed.end()) {
                throw Unsupported{opcode};
            }
        }
    };
    auto dst = [&](const Operand& op) {
        if (op.kind != Operand::Kind::reg && op.kind != Operand::Kind::sink) {
            throw ParseError(line, opcode + ": the destination must be a register");
        }
        const std::int32_t slot = name_slot(op.name, line);
        if (slot >= entry_->special_base &&
            slot < entry_->special_base + static_cast<int>(Special::count)) {
            throw ParseError(line, opcode + ": cannot write a special register");
        }
        return slot;
    };
    auto binary = [&](Op op) {
        need(ops, 3, line, opcode);
        ins.op = op;
        ins.type = one_type();
        ins.dst[0] = dst(ops[0]);
        ins.src[0] = value_slot(ops[1], ins.type, line);
        // shl/shr take a .u32 shift amount whatever the type.
        const Type second = (op == Op::shl || op == Op::shr) ? Type::u32 : ins.type;
        ins.src[1] = value_slot(ops[2], second, line);
    };
    auto unary = [&](Op op) {
        need(ops, 2, line, opcode);
        ins.op = op;
        ins.type = one_type();
        ins.dst[0] = dst(ops[0]);
        ins.src[0] = value_slot(ops[1], ins.type, line);
    };
    const std::initializer_list<std::string_view> float_mods = {"rn",  "rz",  "rm",     "rp",
                                                                "ftz", "sat", "approx", "full"};

    if (base == "mov") {
        need(ops, 2, line, opcode);
        ins.type = one_type();
        if (ops[1].kind == Operand::Kind::vector) {
            ins.op = Op::mov_pack;
            ins.dst[0] = dst(ops[0]);
            if (ops[1].elements.size() > 4 || ops[1].elements.empty())
                throw Unsupported{opcode};
            ins.vector = static_cast<std::uint8_t>(ops[1].elements.size());
            for (std::size_t e = 0; e < ops[1].elements.size(); ++e) {
                ins.src[e] = name_slot(ops[1].elements[e], line);
            }
        } else if (ops[0].kind == Operand::Kind::vector) {
            ins.op = Op::mov_unpack;
            if (ops[0].elements.size() > 4 || ops[0].elements.empty())
                throw Unsupported{opcode};
            ins.vector = static_cast<std::uint8_t>(ops[0].elements.size());
            for (std::size_t e = 0; e < ops[0].elements.size(); ++e) {
                ins.dst[e] = name_slot(ops[0].elements[e], line);
            }
            ins.src[0] = value_slot(ops[1], ins.type, line);
        } else {
            ins.op = Op::mov;
            ins.dst[0] = dst(ops[0]);
            ins.src[0] = value_slot(ops[1], ins.type, line);
        }
        return;
    }
    if (base == "add" || base == "sub") {
        only_mods({"rn", "rz", "rm", "rp", "ftz", "sat"});
        binary(base == "add" ? Op::add : Op::sub);
        ins.saturate = has("sat");
        ins.rounding = rounding();
        return;
    }
    if (base == "mul") {
        only_mods({"lo", "hi", "wide", "rn", "rz", "rm", "rp", "ftz", "sat"});
        Op op = Op::mul_lo;
        if (has("hi"))
            op = Op::mul_hi;
        if (has("wide"))
            op = Op::mul_wide;
        binary(op);
        if (op == Op::mul_wide && type_bits(ins.type) > 32)
            throw ParseError(line, "mul.wide of 64 bits");
        return;
    }
    if (base == "mad" || base == "fma") {
        only_mods({"lo", "hi", "wide", "rn", "rz", "rm", "rp", "ftz", "sat"});
        need(ops, 4, line, opcode);
        ins.type = one_type();
        Op op = Op::mad_lo;
        if (is_float(ins.type))
            op = Op::fma;
        if (has("hi"))
            op = Op::mad_hi;
        if (has("wide"))
            op = Op::mad_wide;
        ins.op = op;
        ins.dst[0] = dst(ops[0]);
        const Type addend =
            op == Op::mad_wide
                ? (is_signed(ins.type) ? (type_bits(ins.type) == 16 ? Type::s32 : Type::s64)
                                       : (type_bits(ins.type) == 16 ? Type::u32 : Type::u64))
                : ins.type;
        ins.src[0] = value_slot(ops[1], ins.type, line);
        ins.src[1] = value_slot(ops[2], ins.type, line);
        ins.src[2] = value_slot(ops[3], addend, line);
        ins.saturate = has("sat");
        return;
    }
    if (base == "div" || base == "rem" || base == "min" || base == "max") {
        only_mods(float_mods);
        static const std::map<std::string_view, Op> ops_by_name = {
            {"div", Op::div}, {"rem", Op::rem}, {"min", Op::min}, {"max", Op::max}};
        binary(ops_by_name.at(base));
        return;
    }
    if (base == "neg" || base == "abs") {
        only_mods({"ftz"});
        unary(base == "neg" ? Op::neg : Op::abs);
        return;
    }
    if (base == "and" || base == "or" || base == "xor") {
        only_mods({});
        binary(base == "and" ? Op::and_ : base == "or" ? Op::or_ : Op::xor_);
        return;
    }
    if (base == "not" || base == "cnot" || base == "popc" || base == "clz" || base == "brev") {
        only_mods({});
        const Op op = base == "not"    ? Op::not_
                      : base == "cnot" ? Op::cnot
                      : base == "popc" ? Op::popc
                      : base == "clz"  ? Op::clz
                                       : Op::brev;
        unary(op);
        return;
    }
    if (base == "shl" || base == "shr") {
        only_mods({});
        binary(base == "shl" ? Op::shl : Op::shr);
        return;
    }
    if (base == "bfe") {
        only_mods({});
        need(ops, 4, line, opcode);
        ins.op = Op::bfe;
        ins.type = one_type();
        ins.dst[0] = dst(ops[0]);
        ins.src[0] = value_slot(ops[1], ins.type, line);
        ins.src[1] = value_slot(ops[2], Type::u32, line);
        ins.src[2] = value_slot(ops[3], Type::u32, line);
        return;
    }
    if (base == "bfi") {
        only_mods({});
        need(ops, 5, line, opcode);
        ins.op = Op::bfi;
        ins.type = one_type();
        ins.dst[0] = dst(ops[0]);
        ins.src[0] = value_slot(ops[1], ins.type, line);
        ins.src[1] = value_slot(ops[2], ins.type, line);
        ins.src[2] = value_slot(ops[3], Type::u32, line);
        ins.src[3] = value_slot(ops[4], Type::u32, line);
        return;
    }
    if (base == "prmt") {
        only_mods({});  // the f4e, b4e, rc8, ecl, ecr, rc16 modes are not implemented
        need(ops, 4, line, opcode);
        ins.op = Op::prmt;
        ins.type = one_type();
        ins.dst[0] = dst(ops[0]);
        ins.src[0] = value_slot(ops[1], Type::b32, line);
        ins.src[1] = value_slot(ops[2], Type::b32, line);
        ins.src[2] = value_slot(ops[3], Type::b32, line);
        return;
    }
    if (base == "bfind") {
        only_mods({"shiftamt"});
        need(ops, 2, line, opcode);
        ins.op = Op::bfind;
        ins.type = one_type();
        ins.shift = has("shiftamt") ? ShiftMode::left_clamp : ShiftMode::left_wrap;
        ins.dst[0] = dst(ops[0]);
        ins.src[0] = value_slot(ops[1], ins.type, line);
        return;
    }
    if (base == "shf") {
        only_mods({"l", "r", "wrap", "clamp"});
        need(ops, 4, line, opcode);
        ins.op = Op::shf;
        ins.type = one_type();
        const bool left = has("l");
        const bool clamp = has("clamp");
        ins.shift = left ? (clamp ? ShiftMode::left_clamp : ShiftMode::left_wrap)
                         : (clamp ? ShiftMode::right_clamp : ShiftMode::right_wrap);
        ins.dst[0] = dst(ops[0]);
        ins.src[0] = value_slot(ops[1], Type::b32, line);
        ins.src[1] = value_slot(ops[2], Type::b32, line);
        ins.src[2] = value_slot(ops[3], Type::u32, line);
        return;
    }
    if (base == "sad") {
        only_mods({});
        need(ops, 4, line, opcode);
        ins.op = Op::sad;
        ins.type = one_type();
        ins.dst[0] = dst(ops[0]);
        ins.src[0] = value_slot(ops[1], ins.type, line);
        ins.src[1] = value_slot(ops[2], ins.type, line);
        ins.src[2] = value_slot(ops[3], ins.type, line);
        return;
    }
    if (base == "copysign") {
        only_mods({});
        binary(Op::copysign);
        return;
    }
    if (base == "redux") {
        if (!has("sync"))
            throw Unsupported{opcode};
        ins.op = Op::redux;
        if (has("add"))
            ins.atom_op = AtomOp::add;
        else if (has("min"))
            ins.atom_op = AtomOp::min;
        else if (has("max"))
            ins.atom_op = AtomOp::max;
        else if (has("and"))
            ins.atom_op = AtomOp::and_;
        else if (has("or"))
            ins.atom_op = AtomOp::or_;
        else if (has("xor"))
            ins.atom_op = AtomOp::xor_;
        else
            throw Unsupported{opcode};
        ins.type = one_type();
        if (is_float(ins.type))
            throw Unsupported{opcode};
        need(ops, 3, line, opcode);
        ins.dst[0] = dst(ops[0]);
        ins.src[0] = value_slot(ops[1], ins.type, line);
        return;
    }
    if (base == "setp") {
        static const std::map<std::string_view, Compare> compares = {
            {"eq", Compare::eq},   {"ne", Compare::ne},   {"lt", Compare::lt},
            {"le", Compare::le},   {"gt", Compare::gt},   {"ge", Compare::ge},
            {"lo", Compare::lo},   {"ls", Compare::ls},   {"hi", Compare::hi},
            {"hs", Compare::hs},   {"equ", Compare::equ}, {"neu", Compare::neu},
            {"ltu", Compare::ltu}, {"leu", Compare::leu}, {"gtu", Compare::gtu},
            {"geu", Compare::geu}, {"num", Compare::num}, {"nan", Compare::nan}};
        bool have_compare = false;
        for (auto m : mods) {
            const auto it = compares.find(m);
            if (it != compares.end()) {
                ins.compare = it->second;
                have_compare = true;
            } else if (m == "and") {
                ins.bool_op = BoolOp::and_;
            } else if (m == "or") {
                ins.bool_op = BoolOp::or_;
            } else if (m == "xor") {
                ins.bool_op = BoolOp::xor_;
            } else if (m != "ftz") {
                throw Unsupported{opcode};
            }
        }
        if (!have_compare)
            throw ParseError(line, "setp without a comparison");
        ins.op = Op::setp;
        ins.type = one_type();
        need(ops, ins.bool_op == BoolOp::none ? 3 : 4, line, opcode);
        if (ops[0].kind == Operand::Kind::pair) {
            ins.dst[0] = name_slot(ops[0].name, line);
            ins.dst2 = name_slot(ops[0].elements[0], line);
        } else {
            ins.dst[0] = dst(ops[0]);
        }
        ins.src[0] = value_slot(ops[1], ins.type, line);
        ins.src[1] = value_slot(ops[2], ins.type, line);
        if (ins.bool_op != BoolOp::none) {
            ins.src[2] = value_slot(ops[3], Type::pred, line);
            ins.negate_c = ops[3].negate;
        }
        return;
    }
    if (base == "selp") {
        only_mods({});
        need(ops, 4, line, opcode);
        ins.op = Op::selp;
        ins.type = one_type();
        ins.dst[0] = dst(ops[0]);
        ins.src[0] = value_slot(ops[1], ins.type, line);
        ins.src[1] = value_slot(ops[2], ins.type, line);
        ins.src[2] = value_slot(ops[3], Type::pred, line);
        return;
    }
    if (base == "cvt") {
        only_mods({"rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "ftz", "sat"});
        need(ops, 2, line, opcode);
        if (types.size() != 2)
            throw ParseError(line, "cvt needs two types");
        ins.op = Op::cvt;
        ins.type = types[0];
        ins.source_type = types[1];
        ins.rounding = rounding();
        ins.saturate = has("sat");
        ins.dst[0] = dst(ops[0]);
        ins.src[0] = value_slot(ops[1], ins.source_type, line);
        return;
    }
    if (base == "cvta") {
        need(ops, 2, line, opcode);
        ins.type = one_type();
        ins.op = has("to") ? Op::cvta_from_generic : Op::cvta_to_generic;
        for (auto m : mods) {
            if (m == "global")
                ins.space = Space::global;
            else if (m == "shared" || m == "shared::cta")
                ins.space = Space::shared;
            else if (m == "local")
                ins.space = Space::local;
            else if (m == "const")
                ins.space = Space::constant;
            else if (m != "to")
                throw Unsupported{opcode};
        }
        ins.dst[0] = dst(ops[0]);
        ins.src[0] = value_slot(ops[1], ins.type, line);
        return;
    }
    if (base == "rcp" || base == "sqrt" || base == "rsqrt" || base == "ex2" || base == "lg2" ||
        base == "sin" || base == "cos") {
        only_mods(float_mods);
        const Op op = base == "rcp"     ? Op::rcp
                      : base == "sqrt"  ? Op::sqrt
                      : base == "rsqrt" ? Op::rsqrt
                      : base == "ex2"   ? Op::ex2
                      : base == "lg2"   ? Op::lg2
                      : base == "sin"   ? Op::sin
                                        : Op::cos;
        unary(op);
        if (!is_float(ins.type))
            throw ParseError(line, opcode + " needs a float type");
        return;
    }
    if (base == "ld" || base == "ldu" || base == "st") {
        const bool load = base != "st";
        ins.op = load ? Op::ld : Op::st;
        for (auto m : mods) {
            if (m == "global")
                ins.space = Space::global;
            else if (m == "shared" || m == "shared::cta")
                ins.space = Space::shared;
            else if (m == "local")
                ins.space = Space::local;
            else if (m == "param" || m == "param::entry")
                ins.space = Space::param;
            else if (m == "const")
                ins.space = Space::constant;
            else if (m == "v2")
                ins.vector = 2;
            else if (m == "v4")
                ins.vector = 4;
            else if (m == "v8" || m == "shared::cluster" || m == "param::func" ||
                     m == "global::cluster") {
                throw Unsupported{opcode};
            }
            // .nc, .volatile, .weak, .relaxed, .acquire, .release, .gpu, .cta, .sys, cache
            // operators (.ca .cg .cs .lu .cv .wb .wt) and .L1::/.L2:: hints: no effect here.
        }
        ins.type = one_type();
        if (ins.type == Type::pred)
            throw ParseError(line, "ld/st of .pred");
        need(ops, 2, line, opcode);
        const Operand& where_operand = load ? ops.at(1) : ops.at(0);
        if (ins.space == Space::param && where_operand.kind == Operand::Kind::address &&
            !where_operand.name.empty()) {
            const std::int32_t symbol = symbol_index(where_operand.name);
            if (symbol >= 0 &&
                program_.symbols[static_cast<std::size_t>(symbol)].space == Space::local) {
                ins.space = Space::local;  // a call sequence's argument scratch
            }
        }
        ins.bytes = static_cast<std::uint8_t>(type_size_bytes(ins.type));
        need(ops, 2, line, opcode);
        const Operand& value = load ? ops[0] : ops[1];
        const Operand& where = load ? ops[1] : ops[0];
        address(ins, where, line);
        std::vector<std::string_view> elements;
        if (value.kind == Operand::Kind::vector) {
            elements = value.elements;
            if (elements.size() != ins.vector)
                throw ParseError(line, "vector size mismatch");
        } else if (ins.vector != 1) {
            throw ParseError(line, "vector access needs a {...} operand");
        }
        if (load) {
            if (elements.empty()) {
                ins.dst[0] = dst(value);
            } else {
                for (std::size_t e = 0; e < elements.size(); ++e)
                    ins.dst[e] = name_slot(elements[e], line);
            }
        } else {
            // src[0] is the address; the values are src[1..]. A vector store has at most 4
            // values, and src has 4 slots: vector stores keep their values in dst[] instead.
            if (elements.empty()) {
                ins.dst[0] = value_slot(value, ins.type, line);
            } else {
                for (std::size_t e = 0; e < elements.size(); ++e) {
                    Operand element;
                    element.kind = elements[e] == "_" ? Operand::Kind::sink : Operand::Kind::reg;
                    element.name = elements[e];
                    if (!elements[e].empty() && (elements[e][0] >= '0' && elements[e][0] <= '9')) {
                        element.kind = Operand::Kind::immediate;
                        element.number = elements[e];
                    }
                    ins.dst[e] = value_slot(element, ins.type, line);
                }
            }
        }
        return;
    }
    if (base == "atom" || base == "red") {
        static const std::map<std::string_view, AtomOp> atom_ops = {
            {"add", AtomOp::add}, {"min", AtomOp::min},  {"max", AtomOp::max},
            {"inc", AtomOp::inc}, {"dec", AtomOp::dec},  {"exch", AtomOp::exch},
            {"cas", AtomOp::cas}, {"and", AtomOp::and_}, {"or", AtomOp::or_},
            {"xor", AtomOp::xor_}};
        bool have_op = false;
        for (auto m : mods) {
            const auto it = atom_ops.find(m);
            if (it != atom_ops.end()) {
                ins.atom_op = it->second;
                have_op = true;
            } else if (m == "global") {
                ins.space = Space::global;
            } else if (m == "shared" || m == "shared::cta") {
                ins.space = Space::shared;
            } else if (m == "v2" || m == "v4" || m == "shared::cluster") {
                throw Unsupported{opcode};
            }
        }
        if (!have_op)
            throw ParseError(line, opcode + " without an operation");
        ins.op = Op::atom;
        ins.type = one_type();
        ins.bytes = static_cast<std::uint8_t>(type_size_bytes(ins.type));
        if (ins.bytes < 4)
            throw Unsupported{opcode};
        const bool is_red = base == "red";
        const std::size_t values = ins.atom_op == AtomOp::cas ? 2 : 1;
        need(ops, (is_red ? 1 : 2) + values, line, opcode);
        std::size_t k = 0;
        ins.dst[0] = is_red ? entry_->sink_slot : dst(ops[k++]);
        address(ins, ops[k++], line);
        ins.src[1] = value_slot(ops[k++], ins.type, line);
        if (values == 2)
            ins.src[2] = value_slot(ops[k++], ins.type, line);
        return;
    }
    if (base == "shfl") {
        if (!has("sync"))
            throw Unsupported{opcode};
        ins.op = Op::shfl;
        if (has("up"))
            ins.shuffle = ShuffleMode::up;
        else if (has("down"))
            ins.shuffle = ShuffleMode::down;
        else if (has("bfly"))
            ins.shuffle = ShuffleMode::bfly;
        else if (has("idx"))
            ins.shuffle = ShuffleMode::idx;
        else
            throw ParseError(line, "shfl without a mode");
        ins.type = one_type();
        need(ops, 5, line, opcode);
        if (ops[0].kind == Operand::Kind::pair) {
            ins.dst[0] = name_slot(ops[0].name, line);
            ins.dst2 = name_slot(ops[0].elements[0], line);
        } else {
            ins.dst[0] = dst(ops[0]);
        }
        ins.src[0] = value_slot(ops[1], Type::b32, line);
        ins.src[1] = value_slot(ops[2], Type::u32, line);
        ins.src[2] = value_slot(ops[3], Type::u32, line);
        ins.src[3] = value_slot(ops[4], Type::u32, line);
        return;
    }
    if (base == "vote") {
        Op op = Op::unsupported;
        if (has("ballot"))
            op = Op::vote_ballot;
        else if (has("all"))
            op = Op::vote_all;
        else if (has("any"))
            op = Op::vote_any;
        else if (has("uni"))
            op = Op::vote_uni;
        else
            throw Unsupported{opcode};
        ins.op = op;
        ins.type = one_type();
        if (ops.size() != 2 && ops.size() != 3)
            throw ParseError(line, "vote takes 2 or 3 operands");
        ins.dst[0] = dst(ops[0]);
        ins.src[0] = value_slot(ops[1], Type::pred, line);
        ins.negate_c = ops[1].negate;
        return;
    }
    if (base == "activemask") {
        need(ops, 1, line, opcode);
        ins.op = Op::activemask;
        ins.type = Type::b32;
        ins.dst[0] = dst(ops[0]);
        return;
    }
    if (base == "bra" || base == "brx") {
        if (base == "brx")
            throw Unsupported{opcode};
        need(ops, 1, line, opcode);
        ins.op = Op::bra;
        if (ops[0].kind != Operand::Kind::reg)
            throw ParseError(line, "bra needs a label");
        pending_branches_.emplace_back(entry_->code.size(), ops[0].name);
        return;
    }
    if (base == "ret" || base == "exit") {
        ins.op = Op::exit;
        return;
    }
    if (base == "trap" || base == "brkpt") {
        ins.op = Op::trap;
        return;
    }
    if (base == "bar" || base == "barrier") {
        if (has("warp")) {
            ins.op = Op::nop;  // __syncwarp: lanes already run in lockstep here
            return;
        }
        if (has("red")) {
            // __syncthreads_count/_and/_or: bar.red.popc.u32 d, 0, {!}p (no thread count).
            if (ops.size() != 3)
                throw Unsupported{opcode + " with a thread count"};
            ins.op = Op::bar_red;
            if (has("popc")) {
                ins.atom_op = AtomOp::add;
            } else if (has("and")) {
                ins.atom_op = AtomOp::and_;
            } else if (has("or")) {
                ins.atom_op = AtomOp::or_;
            } else {
                throw Unsupported{opcode};
            }
            ins.type = one_type();
            ins.dst[0] = dst(ops[0]);
            ins.src[1] = value_slot(ops[2], Type::pred, line);
            ins.negate_c = ops[2].negate;
            return;
        }
        if (!(has("sync") || (base == "barrier" && mods.empty())))
            throw Unsupported{opcode};
        // A thread count other than the whole block would need named-barrier counting.
        if (ops.size() != 1)
            throw Unsupported{opcode + " with a thread count"};
        ins.op = Op::bar;
        return;
    }
    if (base == "nanosleep") {
        need(ops, 1, line, opcode);
        ins.op = Op::nanosleep;
        ins.type = Type::u32;
        ins.src[0] = value_slot(ops[0], Type::u32, line);
        return;
    }
    if (base == "membar" || base == "fence" || base == "prefetch" || base == "prefetchu" ||
        base == "discard" || base == "pmevent") {
        ins.op = Op::nop;
        return;
    }
    throw Unsupported{opcode};
}

// Labels are known once the body is read; file names only at the end of the module.
void Parser::close_entry() {
    for (const auto& [index, label] : pending_branches_) {
        const auto it = labels_.find(std::string(label));
        if (it == labels_.end()) {
            throw ParseError(entry_->locations[index].ptx_line,
                             "unknown label " + std::string(label));
        }
        entry_->code[index].target = it->second;
    }
    std::vector<int> files;
    for (const auto& [index, file] : location_files_)
        files.push_back(file);
    entry_files_.push_back(std::move(files));
}

}  // namespace detail

Module parse_ptx(std::string_view ptx) {
    Module module;
    module.program_ = std::make_shared<const detail::Program>(detail::Parser(ptx).parse());
    return module;
}

}  // namespace grader::sim
