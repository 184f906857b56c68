// Declarations (.reg, .shared, .local, .param, .global, .const, .file, .loc), the symbols they
// make, names resolved to register slots, and the layout of an entry's memory. See ptx_parser.hpp.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/program.hpp"
#include "sim/ptx_parser.hpp"
#include "sim/sim.hpp"
#include "text/text_safety.hpp"

namespace grader::sim::detail {

void Parser::file_directive() {
    const int line = next().line;
    std::uint64_t index = 0;
    if (peek().kind != TokenKind::number || !parse_integer(peek().text, index)) {
        throw ParseError(line, ".file without an index");
    }
    next();
    if (peek().kind != TokenKind::string)
        throw ParseError(line, ".file without a name");
    std::string_view name = next().text;
    // Only the base name: NVRTC writes the compiling machine's working directory here.
    const auto slash = name.find_last_of("/\\");
    if (slash != std::string_view::npos)
        name = name.substr(slash + 1);
    // Whatever a line says (an asm statement can forge one): every race and stop names it.
    files_[static_cast<int>(index)] = text::shorten(name, kMaxLocationFileBytes);
    skip_line(line);
}

// tokens_[start, end) is the declaration up to ';' or '=' (pos_ is at that token).
void Parser::variable(std::size_t start, std::size_t end, int entry_index) {
    Symbol symbol;
    symbol.entry = entry_index;
    Type element = Type::none;
    bool have_space = false;
    bool have_name = false;
    std::vector<std::uint64_t> dims;
    bool empty_dim = false;
    const int line = tokens_[start].line;
    for (std::size_t k = start; k < end; ++k) {
        const Token& t = tokens_[k];
        if (t.text == ".global") {
            symbol.space = Space::global;
            have_space = true;
        } else if (t.text == ".const") {
            symbol.space = Space::constant;
            have_space = true;
        } else if (t.text == ".shared") {
            symbol.space = Space::shared;
            have_space = true;
        } else if (t.text == ".local") {
            symbol.space = Space::local;
            have_space = true;
        } else if (t.text == ".align") {
            std::uint64_t a = 0;
            if (k + 1 >= end || !parse_integer(tokens_[k + 1].text, a)) {
                throw ParseError(t.line, ".align without a number");
            }
            symbol.align = static_cast<std::size_t>(a);
            ++k;
        } else if (t.text == ".texref" || t.text == ".samplerref" || t.text == ".surfref") {
            element = Type::b64;  // opaque handles: only declared, never executed
        } else if (t.kind == TokenKind::word && t.text[0] == '.') {
            bool is_type = false;
            Type ty = Type::none;
            try {
                ty = type_from(t.text.substr(1), is_type);
            } catch (const Unsupported&) {
                is_type = true;
                ty = Type::b16;  // f16/bf16 storage: only its size matters here
            }
            if (is_type)
                element = ty;
            // .visible, .extern, .weak, .common and the like change nothing here.
        } else if (t.kind == TokenKind::word && !have_name) {
            symbol.name = std::string(t.text);
            have_name = true;
        } else if (t.text == "[") {
            if (k + 1 < end && tokens_[k + 1].text == "]") {
                empty_dim = true;
                ++k;
            } else {
                std::uint64_t d = 0;
                if (k + 2 >= end || !parse_integer(tokens_[k + 1].text, d) ||
                    tokens_[k + 2].text != "]") {
                    throw ParseError(t.line, "malformed array dimension");
                }
                dims.push_back(d);
                k += 2;
            }
        } else {
            throw ParseError(t.line, "unexpected '" + std::string(t.text) + "' in declaration");
        }
    }
    if (!have_space || !have_name || element == Type::none) {
        throw ParseError(line, "unrecognised declaration");
    }
    std::size_t count = 1;
    for (auto d : dims)
        count *= static_cast<std::size_t>(d);
    const std::size_t element_size = type_size_bytes(element);
    symbol.size = element_size * count;
    symbol.dynamic_shared = empty_dim && symbol.space == Space::shared;
    if (empty_dim && !symbol.dynamic_shared)
        symbol.size = 0;
    if (symbol.align < element_size)
        symbol.align = std::max<std::size_t>(element_size, 1);
    if (at("=")) {
        next();
        initializer(symbol, element, element_size);
    }
    expect(";");
    program_.symbols.push_back(std::move(symbol));
    const auto index = static_cast<std::int32_t>(program_.symbols.size() - 1);
    const Symbol& s = program_.symbols.back();
    if (s.space == Space::global || s.space == Space::constant) {
        program_.global_symbols.push_back(index);
    }
    if (entry_ != nullptr) {
        if (s.space == Space::shared)
            entry_->shared_symbols.push_back(index);
        if (s.space == Space::local)
            entry_->local_symbols.push_back(index);
    }
}

void Parser::initializer(Symbol& symbol, Type element, std::size_t element_size) {
    std::vector<std::uint64_t> values;
    auto one_value = [&]() {
        bool negative = false;
        if (at("-")) {
            next();
            negative = true;
        }
        const Token& t = next();
        std::uint64_t bits = 0;
        if (t.kind != TokenKind::number || !parse_immediate(t.text, negative, element, bits)) {
            throw ParseError(t.line, "unsupported initializer '" + std::string(t.text) + "'");
        }
        values.push_back(bits);
    };
    if (at("{")) {
        int depth = 0;
        do {
            if (at("{")) {
                ++depth;
                next();
            } else if (at("}")) {
                --depth;
                next();
            } else if (at(",")) {
                next();
            } else {
                one_value();
            }
        } while (depth > 0);
    } else {
        one_value();
    }
    symbol.init.assign(symbol.size, 0);
    for (std::size_t k = 0; k < values.size() && (k + 1) * element_size <= symbol.size; ++k) {
        std::memcpy(symbol.init.data() + k * element_size, &values[k], element_size);
    }
}

std::int32_t Parser::new_slot(unsigned bits) {
    entry_->slot_bits.push_back(static_cast<std::uint8_t>(bits));
    return entry_->slot_count++;
}

// The tokens [start, end) of a .param declarator: its alignment, element type, element count
// and name. A bad array bound is a ParseError where `strict`, else counts as 0 elements.
Parser::ParamDeclarator Parser::param_declarator(std::size_t start, std::size_t end,
                                                 bool strict) const {
    ParamDeclarator d;
    for (std::size_t k = start; k < end; ++k) {
        const Token& t = tokens_[k];
        if (t.text == ".align" && k + 1 < end) {
            std::uint64_t a = 0;
            parse_integer(tokens_[k + 1].text, a);
            d.align = static_cast<std::size_t>(a);
            ++k;
        } else if (t.text == "[" && k + 1 < end) {
            std::uint64_t n = 0;
            if (!parse_integer(tokens_[k + 1].text, n) && strict) {
                throw ParseError(t.line, "malformed parameter array");
            }
            d.count *= static_cast<std::size_t>(n);
            k += 2;
        } else if (t.kind == TokenKind::word && t.text[0] == '.') {
            bool is_type = false;
            Type ty = Type::none;
            try {
                ty = type_from(t.text.substr(1), is_type);
            } catch (const Unsupported&) {
                is_type = true;
                ty = Type::b16;
            }
            if (is_type)
                d.element = ty;
        } else if (t.kind == TokenKind::word) {
            d.name = std::string(t.text);
        }
    }
    return d;
}

void Parser::param(std::size_t start, std::size_t end) {
    const ParamDeclarator d = param_declarator(start, end, true);
    Symbol symbol;
    symbol.space = Space::param;
    symbol.entry = entry_index_;
    symbol.align = d.align;
    symbol.name = d.name;
    if (d.element == Type::none || symbol.name.empty()) {
        throw ParseError(tokens_[start].line, "malformed parameter");
    }
    symbol.size = type_size_bytes(d.element) * d.count;
    symbol.align = std::max(symbol.align, type_size_bytes(d.element));
    program_.symbols.push_back(std::move(symbol));
    entry_->params.push_back(static_cast<std::int32_t>(program_.symbols.size() - 1));
}

// `.param .b64 param0;` inside a call sequence: scratch space each thread writes the callee's
// arguments to. Kept as per-thread local memory; a name declared again (every call sequence
// declares its own param0) reuses the first declaration, grown to the largest size.
void Parser::call_parameter() {
    const std::size_t start = pos_;
    while (!at(";")) {
        if (peek().kind == TokenKind::end)
            throw ParseError(tokens_[start].line, "unterminated .param");
        next();
    }
    const ParamDeclarator d = param_declarator(start + 1, pos_, false);
    Symbol symbol;
    symbol.space = Space::local;
    symbol.entry = entry_index_;
    symbol.align = d.align;
    symbol.name = d.name;
    expect(";");
    if (d.element == Type::none || symbol.name.empty()) {
        throw ParseError(tokens_[start].line, "malformed .param declaration");
    }
    symbol.size = type_size_bytes(d.element) * d.count;
    symbol.align = std::max({symbol.align, type_size_bytes(d.element), std::size_t{1}});
    for (const auto existing : entry_->local_symbols) {
        Symbol& other = program_.symbols[static_cast<std::size_t>(existing)];
        if (other.name == symbol.name) {
            other.size = std::max(other.size, symbol.size);
            other.align = std::max(other.align, symbol.align);
            return;
        }
    }
    program_.symbols.push_back(std::move(symbol));
    entry_->local_symbols.push_back(static_cast<std::int32_t>(program_.symbols.size() - 1));
}

void Parser::reg_declaration() {
    const int line = next().line;
    Type type = Type::none;
    while (peek().kind == TokenKind::word && peek().text[0] == '.') {
        bool is_type = false;
        Type ty = Type::none;
        try {
            ty = type_from(peek().text.substr(1), is_type);
        } catch (const Unsupported&) {
            is_type = true;
            ty = Type::b16;  // f16 registers hold 16 bits
        }
        if (is_type)
            type = ty;
        next();
    }
    if (type == Type::none)
        throw ParseError(line, ".reg without a type");
    const unsigned bits = type == Type::pred ? 64 : type_bits(type);
    while (!at(";")) {
        const Token& name = next();
        if (name.kind != TokenKind::word)
            throw ParseError(name.line, "malformed .reg");
        if (at("<")) {
            next();
            std::uint64_t count = 0;
            if (peek().kind != TokenKind::number || !parse_integer(next().text, count)) {
                throw ParseError(line, "malformed register count");
            }
            expect(">");
            for (std::uint64_t r = 0; r < count; ++r) {
                registers_[std::string(name.text) + std::to_string(r)] = new_slot(bits);
            }
        } else {
            registers_[std::string(name.text)] = new_slot(bits);
        }
        if (at(","))
            next();
    }
    expect(";");
}

void Parser::loc_directive() {
    const int line = next().line;
    std::uint64_t values[3] = {0, 0, 0};
    for (auto& v : values) {
        if (peek().kind == TokenKind::number && peek().line == line)
            parse_integer(next().text, v);
    }
    loc_file_ = static_cast<int>(values[0]);
    loc_line_ = static_cast<int>(values[1]);
    loc_column_ = static_cast<int>(values[2]);
    skip_line(line);  // ", function_name ..., inlined_at ..." on the same line
}

std::int32_t Parser::constant_slot(std::uint64_t value, std::int32_t symbol) {
    const auto key = std::make_pair(value, symbol);
    const auto it = constant_slots_.find(key);
    if (it != constant_slots_.end())
        return it->second;
    const std::int32_t slot = new_slot(64);
    entry_->constants.push_back({slot, value, symbol});
    constant_slots_[key] = slot;
    return slot;
}

std::int32_t Parser::symbol_index(std::string_view name) const {
    // Function scope first (demoted variables, params, local depots), then module scope.
    std::int32_t found = -1;
    for (std::size_t s = 0; s < program_.symbols.size(); ++s) {
        const Symbol& sym = program_.symbols[s];
        if (sym.name != name)
            continue;
        if (sym.entry == entry_index_)
            return static_cast<std::int32_t>(s);
        if (sym.entry == -1)
            found = static_cast<std::int32_t>(s);
    }
    return found;
}

std::int32_t Parser::special_index(std::string_view name) {
    static const std::unordered_map<std::string_view, Special> specials = {
        {"%tid.x", Special::tid_x},
        {"%tid.y", Special::tid_y},
        {"%tid.z", Special::tid_z},
        {"%ntid.x", Special::ntid_x},
        {"%ntid.y", Special::ntid_y},
        {"%ntid.z", Special::ntid_z},
        {"%ctaid.x", Special::ctaid_x},
        {"%ctaid.y", Special::ctaid_y},
        {"%ctaid.z", Special::ctaid_z},
        {"%nctaid.x", Special::nctaid_x},
        {"%nctaid.y", Special::nctaid_y},
        {"%nctaid.z", Special::nctaid_z},
        {"%laneid", Special::laneid},
        {"%warpid", Special::warpid},
        {"%nwarpid", Special::nwarpid},
        {"%smid", Special::smid},
        {"%nsmid", Special::nsmid},
        {"%gridid", Special::gridid},
        {"%lanemask_eq", Special::lanemask_eq},
        {"%lanemask_lt", Special::lanemask_lt},
        {"%lanemask_le", Special::lanemask_le},
        {"%lanemask_gt", Special::lanemask_gt},
        {"%lanemask_ge", Special::lanemask_ge},
        {"%clock", Special::clock},
        {"%clock64", Special::clock64},
        {"%clock_hi", Special::clock_hi},
        {"%globaltimer", Special::globaltimer},
        {"%globaltimer_lo", Special::globaltimer_lo},
        {"%globaltimer_hi", Special::globaltimer_hi},
        {"%dynamic_smem_size", Special::dynamic_smem_size},
        {"%total_smem_size", Special::total_smem_size},
    };
    const auto it = specials.find(name);
    return it == specials.end() ? -1 : static_cast<std::int32_t>(it->second);
}

// A register, special register or symbol address, as a slot.
std::int32_t Parser::name_slot(std::string_view name, int line) {
    const auto it = registers_.find(std::string(name));
    if (it != registers_.end())
        return it->second;
    if (name == "_")
        return entry_->sink_slot;
    if (!name.empty() && name[0] == '%') {
        const std::int32_t special = special_index(name);
        if (special >= 0)
            return entry_->special_base + special;
        if (name.rfind("%envreg", 0) == 0 || name.rfind("%pm", 0) == 0 ||
            name.rfind("%cluster", 0) == 0 || name.rfind("%is_explicit_cluster", 0) == 0 ||
            name.rfind("%aggr_smem_size", 0) == 0 || name.rfind("%reserved_smem", 0) == 0) {
            throw Unsupported{"special register " + std::string(name)};
        }
        throw ParseError(line, "undeclared register " + std::string(name));
    }
    const std::int32_t symbol = symbol_index(name);
    if (symbol < 0)
        throw ParseError(line, "unknown symbol " + std::string(name));
    return constant_slot(0, symbol);
}

void Parser::finish_entry(std::size_t e) {
    Entry& entry = program_.entries[e];
    for (std::size_t k = 0; k < entry.locations.size() && k < entry_files_[e].size(); ++k) {
        const auto it = files_.find(entry_files_[e][k]);
        if (it != files_.end())
            entry.locations[k].file = it->second;
    }
    // Shared memory: module-scope variables first, in order, so they sit at the same offset
    // in every entry; then the entry's own (demoted) ones; extern [] ones after all of them.
    entry.shared_symbols.clear();
    for (int pass = 0; pass < 2; ++pass) {
        for (std::size_t s = 0; s < program_.symbols.size(); ++s) {
            const Symbol& sym = program_.symbols[s];
            if (sym.space != Space::shared)
                continue;
            if ((pass == 0 && sym.entry == -1) || (pass == 1 && sym.entry == static_cast<int>(e))) {
                entry.shared_symbols.push_back(static_cast<std::int32_t>(s));
            }
        }
    }
    std::size_t offset = 0;
    std::size_t dynamic_align = 16;
    for (const auto s : entry.shared_symbols) {
        Symbol& sym = program_.symbols[static_cast<std::size_t>(s)];
        if (sym.dynamic_shared) {
            dynamic_align = std::max(dynamic_align, sym.align);
            continue;
        }
        offset = (offset + sym.align - 1) / sym.align * sym.align;
        sym.offset = offset;
        offset += sym.size;
    }
    entry.static_shared_bytes = offset;
    entry.dynamic_shared_offset = (offset + dynamic_align - 1) / dynamic_align * dynamic_align;
    for (const auto s : entry.shared_symbols) {
        Symbol& sym = program_.symbols[static_cast<std::size_t>(s)];
        if (sym.dynamic_shared)
            sym.offset = entry.dynamic_shared_offset;
    }
    offset = 0;
    for (const auto s : entry.local_symbols) {
        Symbol& sym = program_.symbols[static_cast<std::size_t>(s)];
        offset = (offset + sym.align - 1) / sym.align * sym.align;
        sym.offset = offset;
        offset += sym.size;
    }
    entry.local_bytes = offset;
    offset = 0;
    for (const auto s : entry.params) {
        Symbol& sym = program_.symbols[static_cast<std::size_t>(s)];
        offset = (offset + sym.align - 1) / sym.align * sym.align;
        sym.offset = offset;
        offset += sym.size;
    }
    entry.param_bytes = offset;
}

}  // namespace grader::sim::detail
