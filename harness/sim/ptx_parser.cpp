// PTX text to the decoded Program. Handles what NVRTC emits (module variables, entries with
// .reg/.local/.shared declarations, .loc/.file line information, labels, predicated
// instructions); .func bodies are skipped because calls are not executed.

#include "sim/ptx_parser.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/program.hpp"
#include "sim/ptx_decode.hpp"
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
    launch_bounds(k);
    expect("{");
    body();
    close_entry();
    entry_ = nullptr;
}

// The directives between an entry's parameters and its body that bound its launch: .maxntid
// (threads a block at most) and .reqntid (the block exactly), each of up to three numbers.
void Parser::launch_bounds(std::size_t k) {
    while (tokens_[k].text != "{" && tokens_[k].kind != TokenKind::end) {
        const std::string_view directive = tokens_[k].text;
        ++k;
        if (directive != ".maxntid" && directive != ".reqntid")
            continue;
        std::array<std::uint32_t, 3> dims{1, 1, 1};
        for (std::size_t d = 0; d < 3 && tokens_[k].kind == TokenKind::number; ++d) {
            dims[d] =
                static_cast<std::uint32_t>(std::stoul(std::string(tokens_[k].text), nullptr, 0));
            ++k;
            if (tokens_[k].text == ",")
                ++k;
        }
        if (directive == ".maxntid") {
            entry_->max_threads = std::uint64_t{dims[0]} * dims[1] * dims[2];
        } else {
            entry_->required_block = dims;
        }
    }
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
        const OpcodeRow* row = opcode_row(std::string_view(opcode).substr(0, opcode.find('.')));
        if (row == nullptr)
            throw Unsupported{opcode};
        Decoding decoding(*this, ins, opcode, row->op, line, operands_begin, operands_end);
        // A call's operands are a parameter list, which the operand reader does not read.
        if (row->decoder != &decode_call)
            decoding.read();
        row->decoder(decoding);
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
