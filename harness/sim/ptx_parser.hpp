#pragma once

// The PTX parser's parts, private to it: ptx_parser_lexer.cpp turns text into tokens and reads
// literals, ptx_parser_declarations.cpp reads declarations (.reg, .shared, .local, .param,
// .global, .const, .file, .loc) and resolves names to register slots and symbols, ptx_opcodes.cpp
// holds PTX's vocabulary (the type suffixes, opcodes.def's table of opcodes, modifier chains),
// ptx_parser.cpp walks the module, and ptx_decode*.cpp decode instructions into the Program.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/program.hpp"
#include "sim/sim.hpp"

namespace grader::sim::detail {

enum class TokenKind { word, number, punct, string, end };

struct Token {
    TokenKind kind = TokenKind::end;
    std::string_view text;
    int line = 0;
};

std::vector<Token> tokenize(std::string_view text);

// The compiler's own reports name an instruction it could not decode; the executor reports it
// when the instruction is reached.
struct Unsupported {
    std::string what;
};

bool parse_integer(std::string_view text, std::uint64_t& value);
// An immediate's raw bits for an operand of type `type`: 0fXXXXXXXX and 0dXXXXXXXXXXXXXXXX are
// IEEE bit patterns; integers are two's complement; a decimal float is converted.
bool parse_immediate(std::string_view text, bool negative, Type type, std::uint64_t& bits);

// A type suffix ("s32" of add.s32) as a Type; is_type is false for a word that is no type. Throws
// Unsupported for a type the simulator does not execute (f16, bf16, ...).
Type type_from(std::string_view s, bool& is_type);

inline std::size_t type_size_bytes(Type t) {
    return t == Type::pred ? 1 : type_bits(t) / 8;
}

// One operand as written.
struct Operand {
    enum class Kind { reg, immediate, address, vector, sink, pair } kind = Kind::reg;
    std::string_view name;                   // reg/symbol; address base (empty for [number])
    std::string_view number;                 // immediate text
    bool negative = false;                   // immediate sign
    bool negate = false;                     // !%p
    std::int64_t offset = 0;                 // address
    std::vector<std::string_view> elements;  // vector, pair (second in elements[0])
};

class Decoding;

class Parser {
public:
    explicit Parser(std::string_view text) : tokens_(tokenize(text)) {}

    Program parse();

private:
    friend class Decoding;  // an instruction's decoding resolves names through the parser

    std::vector<Token> tokens_;
    std::size_t pos_ = 0;
    Program program_;
    std::map<int, std::string> files_;

    // Per entry while parsing its body.
    Entry* entry_ = nullptr;
    int entry_index_ = -1;
    std::unordered_map<std::string, std::int32_t> registers_;
    std::map<std::pair<std::uint64_t, std::int32_t>, std::int32_t> constant_slots_;
    std::unordered_map<std::string, std::uint32_t> labels_;
    std::vector<std::pair<std::size_t, std::string_view>> pending_branches_;
    std::vector<std::pair<int, int>> location_files_;  // per instruction: file index
    std::vector<std::vector<int>> entry_files_;
    int loc_file_ = 0, loc_line_ = 0, loc_column_ = 0;

    // ---- tokens (ptx_parser_lexer.cpp) ----

    const Token& peek(std::size_t ahead = 0) const {
        return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
    }
    const Token& next() {
        const Token& t = tokens_[pos_];
        if (t.kind != TokenKind::end)
            ++pos_;
        return t;
    }
    bool at(std::string_view text) const {
        return peek().text == text && peek().kind != TokenKind::string;
    }
    void expect(std::string_view text);
    void skip_line(int line);
    void skip_to_semicolon();
    void skip_braced_block();

    // ---- declarations and names (ptx_parser_declarations.cpp) ----

    void file_directive();
    void variable(std::size_t start, std::size_t end, int entry_index);
    void initializer(Symbol& symbol, Type element, std::size_t element_size);
    struct ParamDeclarator {
        std::size_t align = 1;  // as Symbol's, where no .align is given
        Type element = Type::none;
        std::size_t count = 1;
        std::string name;
    };
    ParamDeclarator param_declarator(std::size_t start, std::size_t end, bool strict) const;
    void param(std::size_t start, std::size_t end);
    void call_parameter();
    void reg_declaration();
    void loc_directive();
    std::int32_t new_slot(unsigned bits);
    std::int32_t constant_slot(std::uint64_t value, std::int32_t symbol);
    std::int32_t symbol_index(std::string_view name) const;
    static std::int32_t special_index(std::string_view name);
    std::int32_t name_slot(std::string_view name, int line);
    void finish_entry(std::size_t e);

    // ---- the module, entries and instructions (ptx_parser.cpp) ----

    void top_level();
    void entry(std::size_t start);
    void launch_bounds(std::size_t k);
    void body();
    void instruction();
    std::vector<Operand> operands(std::size_t begin, std::size_t end);
    std::int32_t value_slot(const Operand& op, Type type, int line);
    void close_entry();
};

}  // namespace grader::sim::detail
