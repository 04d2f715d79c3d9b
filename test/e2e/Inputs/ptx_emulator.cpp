// An interpreter for the PTX that tbc's CUDA path emits, behind the fake
// libcuda (fake_libcuda.c, with FAKE_CUDA_EXECUTE=1): kernels run on the CPU,
// one thread at a time, so that the CUDA modules' results can be checked
// against transformers on a machine without a GPU.
//
// It covers the instructions LLVM's NVPTX backend produces for tbc's kernels
// (integer and f32 arithmetic, conversions including bf16, global / shared /
// local / param memory, predicates and branches, libdevice's inlined math),
// cp.async (16-byte copies, commit_group, wait_group: each copy lands when its
// thread waits for its group, not earlier, so that reading a stage before
// waiting for it reads stale data here as it may on a GPU),
// and the collective ones with their semantics: shfl.sync (.bfly, .idx), vote.sync
// (any, all), ldmatrix (.trans too)
// (m8n8 16-bit, x1/x2/x4) and mma.sync m16n8k16 (bf16 and f16, f32
// accumulation) wait for every live lane of the warp, wgmma.mma_async
// (sm_90a: m64nNk16, B in shared memory by matrix descriptor, K-major in any
// layout or N-major in a swizzle, A K-major there too or in registers;
// results reach the registers at wgmma.wait_group; a shared
// byte whose writer has not run fence.proxy.async since may not be read,
// nor one a cp.async in flight writes, from the issue to the wait) for
// every thread of the warpgroup, bar.sync for every live thread of the block. An
// instruction it does not know fails the module load with its text, so a
// gap shows as an error, never as a wrong number. It is a test double: the
// arithmetic is the CPU's (approximate instructions are computed exactly,
// mma accumulates in f32 in k order), close to a GPU's, not bit-equal.
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

enum class Op {
  Add, Sub, Mul, MulHi, MulWide, Mad, MadCC, MadcHi, Fma, Div, Min, Max, MinNaN, MaxNaN, Neg,
  Abs, And, Or, Xor, Not, Shl, Shr, Shf, Bfe, Selp, Setp, Mov, Cvt, Cvta, Ld, St, Bra, Ret, Bar,
  Shfl, Vote, Mma, Ldmatrix, Rcp, Rsqrt, Sqrt, Ex2, Copysign, Membar, WarpSync, AtomAdd,
  CpAsync, CpAsyncCommit, CpAsyncWait, Wgmma, WgmmaFence, WgmmaCommit, WgmmaWait, FenceProxyAsync,
  Prefetch, GridDepWait, GridDepLaunch,
};

/// A PTX type: its kind (b, u, s, f, pred) and width in bits.
struct Type {
  char kind = 'b';
  int bits = 32;
};

struct Operand {
  // Packed (the interpreter reads an instruction's operands for every thread
  // that runs it: smaller instructions stay in the CPU's caches).
  enum Kind : uint8_t { None, Reg, Imm, Special, Symbol, Vec, Addr, Label } kind = None;
  uint8_t special = 0; // Special: 0-2 tid, 3-5 ntid, 6-8 ctaid, 9-11 nctaid, 12 laneid
  uint8_t count = 0;   // Vec
  int reg = -1;        // Reg; Addr: base register or -1
  int symbol = -1;     // Symbol / Addr: symbol index or -1
  int label = -1;      // Label: instruction index
  int regs[4] = {-1, -1, -1, -1}; // Vec: -1 where an element is an immediate (st only)
  union {
    struct {
      uint64_t imm;   // Imm
      int64_t offset; // Addr
    };
    uint64_t imms[4] = {}; // Vec: its immediates
  };
};

/// What an instruction's execution rarely reads: its text (for messages) and
/// wgmma's register lists.
struct InstrText {
  std::string text;
  // wgmma: the D registers ({d0, ...}) and A's 4 registers (empty: A by
  // descriptor, ops[0]).
  std::vector<int> accumulators, wgmmaA;
};

struct Instr {
  Op op;
  Type type, from;        // from: cvt's source type
  char space = 'g';       // ld/st: g(lobal), s(hared), l(ocal), p(aram)
  int vec = 1;            // ld/st .v2 / .v4
  // setp: the comparison, parsed once (comparing its text per executed
  // setp was a seventh of the emulator's time); `unordered`: its float
  // form ends in u (true where either operand is NaN).
  enum class Cmp { Eq, Ne, Lt, Le, Gt, Ge, Num, Nan } cmp = Cmp::Eq;
  bool unordered = false;
  int round = FE_TONEAREST;
  bool sat = false, x2 = false, half = false; // cvt .sat / bf16x2; mma f16
  bool trans = false;                          // ldmatrix .trans
  bool voteAll = false;                        // vote.sync .all (else .any)
  bool shflIdx = false;                        // shfl.sync .idx (else .bfly)
  // wgmma: ops a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b; its
  // registers in `cold`.
  int wgmmaN = 0;                // wgmma: N of m64nNk16
  bool wgmmaTransB = false;      // wgmma: B N-major (imm-trans-b 1)
  char toInteger = 0; // cvt .rni / .rmi / .rpi / .rzi: round to an integer value ('n', 'm', 'p', 'z')
  int pred = -1;
  bool predNeg = false;
  bool ftz = false;      // .ftz
  bool shiftLeft = false; // shf.l (else shf.r)
  Operand ops[5];
  int nops = 0;
  // The commonest forms (classifyFast; Slow: none of them), which
  // Block::step runs inline (runFast) without execute()'s call and its
  // dispatch on the op, the types, the modifiers and the operands' kinds:
  // three in four of the instructions the emulated tests run, and 29% of
  // the host instructions the interpreter ran (cachegrind, Llama's f32
  // module). Each computes what execute() computes for it.
  enum Fast : uint8_t {
    Slow, AddF32, SubF32, MulF32, FmaF32, AddInt, SubInt, MulInt, MadInt, AndInt, OrInt, XorInt,
    ShlInt, MovInt, Cvta, CvtInt, MulWideU, MulWideS, SetpS, SetpU, Selp, LdParam
  } fast = Slow;
  std::unique_ptr<InstrText> cold = std::make_unique<InstrText>();
};

/// The device allocation holding [address, address + bytes), from the
/// driver that links the emulator in (fake_libcuda.c): 0 if there is none.
/// Without that driver, global accesses are not bounds-checked.
extern "C" int ptx_emulator_allocation(uint64_t address, uint64_t bytes, uint64_t *base,
                                       uint64_t *size) __attribute__((weak));

/// A symbol: a module global (host buffer), a block's shared variable
/// (offset into the block's shared memory), a thread's local depot, or a
/// kernel parameter.
struct Symbol {
  enum Kind { Global, Shared, Local, Param } kind;
  uint64_t address = 0; // Global
  size_t bytes = 0;     // Global: its size
  size_t offset = 0;    // Shared: offset; Param: index
  int paramBytes = 8;
  bool dynamic = false; // Shared: the launch's dynamic shared memory, after the function's own
};

struct Function {
  std::string name;
  std::vector<Instr> code;
  int registers = 0;
  size_t sharedBytes = 0, localBytes = 0;
  bool wgmma = false; // has wgmma.mma_async: shared stores are tracked for the proxy fence
  // has griddepcontrol.wait: a launch may start before the kernel before it
  // ends, so no thread may touch global memory (but by prefetch) before it
  bool waitsForGrids = false;
};

struct Module {
  std::vector<Symbol> symbols;
  std::map<std::string, int> symbolIndex;
  std::vector<std::unique_ptr<Function>> functions;
  std::vector<std::unique_ptr<uint8_t[]>> storage;
};

std::string trim(const std::string &s) {
  size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '{' || c == '[')
      ++depth;
    if (c == '}' || c == ']')
      --depth;
    if (c == sep && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty())
    out.push_back(trim(cur));
  return out;
}

Type parseType(const std::string &t, bool &ok) {
  Type r;
  if (t == "pred")
    return {'p', 1};
  if (t.size() < 2 || !strchr("bsuf", t[0])) {
    ok = false;
    return r;
  }
  r.kind = t[0];
  r.bits = atoi(t.c_str() + 1);
  if (r.bits != 8 && r.bits != 16 && r.bits != 32 && r.bits != 64)
    ok = false;
  return r;
}

/// Instr::fast for `in`: its form where Block::step runs it inline, or Slow.
/// Only plain forms qualify: a destination register, register or immediate
/// sources, round-to-nearest, no .sat; integer types (b, u, s) or f32.
void classifyFast(Instr &in, const std::vector<Symbol> &symbols) {
  if (in.nops < 1 || in.ops[0].kind != Operand::Reg)
    return;
  auto regOrImm = [&](int i) {
    return in.ops[i].kind == Operand::Reg || in.ops[i].kind == Operand::Imm;
  };
  // Register or immediate sources, 1, 2 or 3 of them.
  bool unary = in.nops == 2 && regOrImm(1), binary = in.nops == 3 && regOrImm(1) && regOrImm(2),
       ternary = in.nops == 4 && regOrImm(1) && regOrImm(2) && regOrImm(3);
  auto isInteger = [](const Type &t) { return t.kind == 'u' || t.kind == 's' || t.kind == 'b'; };
  const Type &ty = in.type;
  bool plain = in.round == FE_TONEAREST && !in.sat, f32 = ty.kind == 'f' && ty.bits == 32,
       integer = isInteger(ty);
  using F = Instr::Fast;
  switch (in.op) {
  case Op::Add:
    if (binary && plain)
      in.fast = f32 ? F::AddF32 : integer ? F::AddInt : F::Slow;
    break;
  case Op::Sub:
    if (binary && plain)
      in.fast = f32 ? F::SubF32 : integer ? F::SubInt : F::Slow;
    break;
  case Op::Mul:
    if (binary && plain)
      in.fast = f32 ? F::MulF32 : integer ? F::MulInt : F::Slow;
    break;
  case Op::Mad:
    if (ternary && integer)
      in.fast = F::MadInt;
    break;
  case Op::Fma:
    if (ternary && plain && f32)
      in.fast = F::FmaF32;
    break;
  case Op::And:
  case Op::Or:
  case Op::Xor:
    if (binary && integer)
      in.fast = in.op == Op::And ? F::AndInt : in.op == Op::Or ? F::OrInt : F::XorInt;
    break;
  case Op::Shl:
    if (binary && integer)
      in.fast = F::ShlInt;
    break;
  case Op::MulWide:
    if (binary && (ty.kind == 'u' || ty.kind == 's') && ty.bits == 32)
      in.fast = ty.kind == 'u' ? F::MulWideU : F::MulWideS;
    break;
  case Op::Setp:
    if (binary && integer && in.cmp <= Instr::Cmp::Ge)
      in.fast = ty.kind == 's' ? F::SetpS : F::SetpU;
    break;
  case Op::Selp:
    if (in.nops == 4 && regOrImm(1) && regOrImm(2) && in.ops[3].kind == Operand::Reg)
      in.fast = F::Selp;
    break;
  case Op::Mov:
    if (unary && integer)
      in.fast = F::MovInt;
    break;
  case Op::Cvta:
    if (unary)
      in.fast = F::Cvta;
    break;
  case Op::Cvt:
    if (unary && !in.x2 && !in.sat && integer && isInteger(in.from))
      in.fast = F::CvtInt;
    break;
  case Op::Ld:
    if (in.nops == 2 && in.space == 'p' && in.vec == 1 && in.ops[1].kind == Operand::Addr &&
        in.ops[1].symbol >= 0 && symbols[in.ops[1].symbol].kind == Symbol::Param &&
        (ty.bits == 32 || ty.bits == 64))
      in.fast = F::LdParam;
    break;
  default:
    break;
  }
}

class Parser {
public:
  Parser(Module &m, std::string &error) : m(m), error(error) {}

  bool parse(const char *text) {
    std::vector<std::string> lines;
    for (const char *p = text; *p;) {
      const char *e = strchr(p, '\n');
      std::string line = e ? std::string(p, e) : std::string(p);
      size_t c = line.find("//");
      if (c != std::string::npos)
        line = line.substr(0, c);
      lines.push_back(trim(line));
      if (!e)
        break;
      p = e + 1;
    }
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string &l = lines[i];
      if (l.rfind(".global", 0) == 0 || l.rfind(".const", 0) == 0) {
        if (!global(l))
          return false;
      } else if (l.rfind(".shared", 0) == 0 || l.rfind(".extern .shared", 0) == 0) {
        if (!isDynamicShared(l))
          return fail("unsupported module-level shared memory: " + l);
        dynamicShared(l);
      } else if (l.find(".entry ") != std::string::npos) {
        if (!function(lines, i))
          return false;
      }
    }
    return true;
  }

private:
  Module &m;
  std::string &error;
  Function *f = nullptr;
  std::map<std::string, int> regIndex, labels;
  std::vector<std::pair<int, std::string>> pendingLabels; // instr, label

  bool fail(const std::string &what) {
    error = "ptx emulator: " + what;
    return false;
  }

  int addSymbol(const std::string &name, Symbol s) {
    int i = int(m.symbols.size());
    m.symbols.push_back(s);
    m.symbolIndex[name] = i;
    return i;
  }

  // MLIR's gpu.dynamic_shared_memory is a zero-sized shared global, which
  // NVPTX prints as `.shared .align 16 .b8 __dynamic_shmem__0;` (at module
  // level, or in its one user's body, "demoted"); CUDA's is
  // `.extern .shared .align 16 .b8 name[];`. Either is the start of the
  // launch's dynamic shared memory (sharedMemBytes), which the GPU places
  // after the function's own; a function here may not mix the two (on a GPU
  // the symbol's one byte may sit before its own variables, which what it
  // reads past the symbol would then overlap).
  static bool isDynamicShared(const std::string &l) {
    size_t end = l.find_first_of("[;");
    return end != std::string::npos && l.find(".align 16") != std::string::npos &&
           l.find(".b8 ") != std::string::npos &&
           (l[end] == ';' || l.compare(end, 2, "[]") == 0 || l.compare(end, 3, "[0]") == 0);
  }
  void dynamicShared(const std::string &l) {
    size_t end = l.find_first_of("[;"), ns = l.find_last_of(" \t", end);
    Symbol s{Symbol::Shared};
    s.dynamic = true;
    addSymbol(l.substr(ns + 1, end - ns - 1), s);
  }

  // .global .align 4 .b8 name[N] = {b0, b1, ...};  (or no initializer)
  bool global(const std::string &l) {
    size_t lb = l.find('['), rb = l.find(']');
    if (lb == std::string::npos || rb == std::string::npos)
      return fail("unsupported global: " + l);
    size_t ns = l.find_last_of(" \t", lb);
    std::string name = l.substr(ns + 1, lb - ns - 1);
    size_t n = strtoull(l.c_str() + lb + 1, nullptr, 10);
    int elem = l.find(".b8") != std::string::npos ? 1 : l.find(".b32") != std::string::npos ? 4 : 8;
    auto buf = std::make_unique<uint8_t[]>(n * elem + 16);
    memset(buf.get(), 0, n * elem + 16);
    size_t eq = l.find('=');
    if (eq != std::string::npos) {
      std::string init = l.substr(l.find('{', eq) + 1);
      size_t k = 0;
      for (const std::string &v : split(init.substr(0, init.find('}')), ',')) {
        uint64_t x = strtoull(v.c_str(), nullptr, 0);
        memcpy(buf.get() + k * elem, &x, elem);
        ++k;
      }
    }
    Symbol s{Symbol::Global};
    s.address = uint64_t(uintptr_t(buf.get()));
    s.bytes = n * elem;
    m.storage.push_back(std::move(buf));
    addSymbol(name, s);
    return true;
  }

  bool function(const std::vector<std::string> &lines, size_t &i) {
    auto fn = std::make_unique<Function>();
    f = fn.get();
    regIndex.clear();
    labels.clear();
    pendingLabels.clear();
    const std::string &head = lines[i];
    size_t e = head.find(".entry ") + 7, paren = head.find('(', e);
    f->name = trim(head.substr(e, paren == std::string::npos ? std::string::npos : paren - e));
    int param = 0;
    size_t j = i + 1;
    for (; j < lines.size() && lines[j] != "{"; ++j) {
      const std::string &l = lines[j];
      if (l.rfind(".param", 0) != 0)
        continue;
      std::string name = l.substr(l.find_last_of(" \t") + 1);
      if (!name.empty() && name.back() == ',')
        name.pop_back();
      Symbol s{Symbol::Param};
      s.offset = size_t(param++);
      s.paramBytes = l.find(".u32") != std::string::npos || l.find(".b32") != std::string::npos ? 4 : 8;
      addSymbol(name, s);
    }
    int depth = 0;
    for (; j < lines.size(); ++j) {
      const std::string &l = lines[j];
      if (l.empty())
        continue;
      if (l == "{") {
        ++depth;
        continue;
      }
      if (l == "}") {
        if (--depth == 0)
          break;
        continue;
      }
      if (l.back() == ':') {
        labels[l.substr(0, l.size() - 1)] = int(f->code.size());
        continue;
      }
      if (l.rfind(".reg", 0) == 0) {
        // .reg .b32 %r<393>;  or  .reg .b64 %SP;  or (inline asm) .reg .pred p;
        std::string decl = trim(l.substr(l.find_last_of(" \t") + 1));
        decl.pop_back(); // ';'
        size_t lt = decl.find('<');
        if (lt == std::string::npos) {
          reg(decl);
        } else {
          int n = atoi(decl.c_str() + lt + 1);
          for (int k = 0; k < n; ++k)
            reg(decl.substr(0, lt) + std::to_string(k));
        }
        continue;
      }
      if (l.rfind(".shared", 0) == 0 && isDynamicShared(l)) {
        // The module's dynamic shared memory, demoted into its one user.
        dynamicShared(l);
        continue;
      }
      if (l.rfind(".shared", 0) == 0 || l.rfind(".local", 0) == 0) {
        bool shared = l[1] == 's';
        size_t lb = l.find('['), ns = l.find_last_of(" \t", lb);
        std::string name = l.substr(ns + 1, lb - ns - 1);
        size_t n = strtoull(l.c_str() + lb + 1, nullptr, 10);
        size_t align = 16;
        size_t &bytes = shared ? f->sharedBytes : f->localBytes;
        bytes = (bytes + align - 1) / align * align;
        Symbol s{shared ? Symbol::Shared : Symbol::Local};
        s.offset = bytes;
        bytes += n;
        addSymbol(name, s);
        continue;
      }
      if (l[0] == '.')
        continue; // .maxntid, .pragma, ...
      // An instruction may span lines (mma's operand lists): up to its ';'.
      std::string full = l;
      while (full.back() != ';' && j + 1 < lines.size())
        full += " " + lines[++j];
      if (!instruction(full))
        return false;
    }
    i = j;
    for (auto &[at, name] : pendingLabels) {
      auto it = labels.find(name);
      if (it == labels.end())
        return fail("unknown label " + name);
      for (Operand &o : f->code[at].ops)
        if (o.kind == Operand::Label)
          o.label = it->second;
    }
    // Its dynamic shared memory is placed after its own shared variables
    // here, but on a GPU the module-level symbol may sit before them.
    if (f->sharedBytes)
      for (const Instr &in : f->code)
        for (int k = 0; k < in.nops; ++k)
          if (in.ops[k].symbol >= 0 && m.symbols[in.ops[k].symbol].dynamic)
            return fail(f->name + " has both shared variables and dynamic shared memory");
    f->registers = int(regIndex.size());
    m.functions.push_back(std::move(fn));
    return true;
  }

  int reg(const std::string &name) {
    auto it = regIndex.find(name);
    if (it != regIndex.end())
      return it->second;
    int i = int(regIndex.size());
    regIndex[name] = i;
    return i;
  }

  bool operand(const std::string &s, Operand &o, Instr &in) {
    if (s.empty())
      return fail("empty operand in: " + in.cold->text);
    if (s[0] == '{') {
      o.kind = Operand::Vec;
      for (const std::string &r : split(s.substr(1, s.size() - 2), ',')) {
        if (o.count == 4 || r.empty())
          return fail("unsupported vector operand in: " + in.cold->text);
        if (r[0] == '%') {
          o.regs[o.count++] = reg(r);
          continue;
        }
        // An immediate element: only what a store writes may have one.
        Operand imm;
        if (in.op != Op::St || !operand(r, imm, in) || imm.kind != Operand::Imm)
          return fail("unsupported vector operand in: " + in.cold->text);
        o.imms[o.count++] = imm.imm;
      }
      return true;
    }
    if (s[0] == '[') {
      o.kind = Operand::Addr;
      std::string a = trim(s.substr(1, s.size() - 2));
      size_t plus = a.find('+');
      std::string base = trim(a.substr(0, plus));
      if (plus != std::string::npos)
        o.offset = strtoll(a.c_str() + plus + 1, nullptr, 0);
      if (base[0] == '%') {
        o.reg = reg(base);
      } else {
        auto it = m.symbolIndex.find(base);
        if (it == m.symbolIndex.end())
          return fail("unknown symbol " + base + " in: " + in.cold->text);
        o.symbol = it->second;
      }
      return true;
    }
    if (s[0] == '%') {
      static const char *specials[] = {"%tid.x",   "%tid.y",   "%tid.z",   "%ntid.x", "%ntid.y",
                                       "%ntid.z",  "%ctaid.x", "%ctaid.y", "%ctaid.z", "%nctaid.x",
                                       "%nctaid.y", "%nctaid.z", "%laneid"};
      for (int k = 0; k < 13; ++k)
        if (s == specials[k]) {
          o.kind = Operand::Special;
          o.special = k;
          return true;
        }
      if (s.find('.') != std::string::npos)
        return fail("unsupported special register " + s);
      o.kind = Operand::Reg;
      o.reg = reg(s);
      return true;
    }
    if (s[0] == '$' || (in.op == Op::Bra)) {
      o.kind = Operand::Label;
      pendingLabels.push_back({int(f->code.size()), s});
      return true;
    }
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' || s[1] == 'D')) {
      o.kind = Operand::Imm;
      o.imm = strtoull(s.c_str() + 2, nullptr, 16);
      return true;
    }
    if (isdigit(uint8_t(s[0])) || s[0] == '-') {
      o.kind = Operand::Imm;
      o.imm = uint64_t(strtoll(s.c_str(), nullptr, 0));
      return true;
    }
    if (regIndex.count(s)) { // declared in an inline asm block: `.reg .pred p;`
      o.kind = Operand::Reg;
      o.reg = regIndex[s];
      return true;
    }
    auto it = m.symbolIndex.find(s);
    if (it == m.symbolIndex.end())
      return fail("unknown operand " + s + " in: " + in.cold->text);
    o.kind = Operand::Symbol;
    o.symbol = it->second;
    return true;
  }

  // wgmma.fence.sync.aligned; wgmma.commit_group.sync.aligned;
  // wgmma.wait_group.sync.aligned n; fence.proxy.async.shared::cta;
  // wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16 (or .f16.f16) {d0, .., d(N/2-1)},
  // a-desc, b-desc, scale-d, 1, 1, 0, trans-b (A from shared memory, K-major;
  // B K-major, or N-major with trans-b 1), or {d..}, {a0, a1, a2, a3}, b-desc,
  // scale-d, 1, 1, trans-b (A from registers); other forms are refused.
  bool asyncProxyInstruction(Instr &in, const std::vector<std::string> &parts,
                             const std::string &rest) {
    auto is = [&](std::initializer_list<const char *> want) {
      if (parts.size() != want.size() + 1)
        return false;
      size_t k = 1;
      for (const char *w : want)
        if (parts[k++] != w)
          return false;
      return true;
    };
    std::vector<std::string> ops = split(rest, ',');
    auto done = [&](Op op, size_t nops) {
      if (ops.size() != nops)
        return fail("unsupported operands: " + in.cold->text);
      in.op = op;
      for (const std::string &s : ops)
        if (!operand(s, in.ops[in.nops++], in))
          return false;
      f->code.push_back(std::move(in));
      return true;
    };
    if (parts[0] == "fence")
      return is({"proxy", "async", "shared::cta"}) ? done(Op::FenceProxyAsync, 0)
                                                    : fail("unsupported fence: " + in.cold->text);
    if (is({"fence", "sync", "aligned"}))
      return done(Op::WgmmaFence, 0);
    if (is({"commit_group", "sync", "aligned"}))
      return done(Op::WgmmaCommit, 0);
    if (is({"wait_group", "sync", "aligned"}))
      return done(Op::WgmmaWait, 1);
    int n = 0;
    if (parts.size() != 8 || parts[1] != "mma_async" || parts[2] != "sync" ||
        parts[3] != "aligned" || sscanf(parts[4].c_str(), "m64n%dk16", &n) != 1 ||
        parts[4] != "m64n" + std::to_string(n) + "k16" || n % 8 || n < 8 || n > 256 ||
        parts[5] != "f32" || parts[6] != parts[7] || (parts[6] != "bf16" && parts[6] != "f16"))
      return fail("unsupported wgmma: " + in.cold->text);
    in.half = parts[6] == "f16";
    auto registers = [&](const std::string &list, std::vector<int> &out) {
      if (list.size() < 2 || list[0] != '{' || list.back() != '}')
        return false;
      for (const std::string &r : split(list.substr(1, list.size() - 2), ',')) {
        if (r.empty() || r[0] != '%')
          return false;
        out.push_back(reg(r));
      }
      return true;
    };
    const bool aInRegisters = ops.size() == 7 && !ops[1].empty() && ops[1][0] == '{';
    const std::string transB = ops.empty() ? "" : ops.back();
    if (!(aInRegisters || (ops.size() == 8 && ops[6] == "0")) || (transB != "0" && transB != "1"))
      return fail("unsupported wgmma operands (A K-major or in registers): " + in.cold->text);
    if (!registers(ops[0], in.cold->accumulators))
      return fail("unsupported wgmma accumulator: " + in.cold->text);
    if (int(in.cold->accumulators.size()) != n / 2)
      return fail("wgmma accumulator count: " + in.cold->text);
    if (aInRegisters && (!registers(ops[1], in.cold->wgmmaA) || in.cold->wgmmaA.size() != 4))
      return fail("unsupported wgmma A registers: " + in.cold->text);
    in.wgmmaN = n;
    in.wgmmaTransB = transB == "1";
    f->wgmma = true;
    ops.erase(ops.begin());
    if (aInRegisters)
      ops[0] = "0"; // no A descriptor
    ops.resize(5);
    return done(Op::Wgmma, 5);
  }

  bool instruction(std::string l) {
    Instr in;
    in.cold->text = l;
    if (!l.empty() && l.back() == ';')
      l.pop_back();
    if (l[0] == '@') {
      size_t sp = l.find_first_of(" \t");
      std::string p = l.substr(1, sp - 1);
      in.predNeg = p[0] == '!';
      in.pred = reg(in.predNeg ? p.substr(1) : p);
      l = trim(l.substr(sp));
    }
    size_t sp = l.find_first_of(" \t");
    std::string opcode = l.substr(0, sp), rest = sp == std::string::npos ? "" : trim(l.substr(sp));
    std::vector<std::string> parts = split(opcode, '.');
    const std::string &base = parts[0];
    auto has = [&](const char *mod) {
      for (size_t k = 1; k < parts.size(); ++k)
        if (parts[k] == mod)
          return true;
      return false;
    };
    if (base == "wgmma" || base == "fence")
      return asyncProxyInstruction(in, parts, rest);
    bool ok = true;
    // Every modifier must be one whose meaning is implemented below (or one
    // that cannot change a result here): an unknown one is an error, not a
    // silently different instruction.
    static const char *known[] = {
        "rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "sat", "ftz", "approx", "full", "lo",
        "hi", "wide", "cc", "NaN", "global", "shared", "local", "param", "nc", "v2", "v4", "sync",
        "aligned", "uni", "bfly", "idx", "l", "wrap", "to", "row", "col", "m16n8k16", "bf16", "f16",
        "bf16x2", "f16x2", "pred", "eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs",
        "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan", "ptr", "m8n8", "x1", "x2",
        "x4", "b16", "trans", "gl", "warp", "add", "async", "cg", "ca", "commit_group",
        "wait_group"};
    for (size_t k = 1; k < parts.size(); ++k) {
      bool typeOk = true;
      parseType(parts[k], typeOk);
      bool isKnown = typeOk;
      for (const char *kn : known)
        isKnown |= parts[k] == kn;
      isKnown |= base == "vote" && (parts[k] == "any" || parts[k] == "all");
      isKnown |= base == "prefetch" && parts[k] == "L2";
      isKnown |= base == "griddepcontrol" && (parts[k] == "wait" || parts[k] == "launch_dependents");
      if (!isKnown)
        return fail("unsupported modifier ." + parts[k] + " in: " + in.cold->text);
    }
    in.ftz = has("ftz");
    in.shiftLeft = base == "shf" && has("l");
    auto lastType = [&] { return parseType(parts.back(), ok); };
    static const std::map<std::string, Op> simple = {
        {"add", Op::Add},   {"sub", Op::Sub},   {"fma", Op::Fma},         {"div", Op::Div},
        {"neg", Op::Neg},   {"abs", Op::Abs},   {"and", Op::And},         {"or", Op::Or},
        {"xor", Op::Xor},   {"not", Op::Not},   {"shl", Op::Shl},         {"shr", Op::Shr},
        {"selp", Op::Selp}, {"mov", Op::Mov},   {"cvta", Op::Cvta},       {"bra", Op::Bra},
        {"ret", Op::Ret},   {"bar", Op::Bar},   {"rcp", Op::Rcp},         {"rsqrt", Op::Rsqrt},
        {"sqrt", Op::Sqrt}, {"ex2", Op::Ex2},   {"copysign", Op::Copysign}, {"bfe", Op::Bfe},
        {"shf", Op::Shf},   {"madc", Op::MadcHi}};
    // madc is implemented for .hi alone, mad (and mad.cc) for .lo alone.
    if ((base == "madc" && !has("hi")) || (base == "mad" && (has("hi") || has("wide"))))
      return fail("unsupported instruction: " + in.cold->text);
    if (auto it = simple.find(base); it != simple.end() && !(base == "bar" && has("warp"))) {
      in.op = it->second;
      if (in.op != Op::Bra && in.op != Op::Ret && in.op != Op::Bar)
        in.type = lastType();
    } else if (base == "mul") {
      in.op = has("wide") ? Op::MulWide : has("hi") ? Op::MulHi : Op::Mul;
      in.type = lastType();
    } else if (base == "mad") {
      in.op = has("cc") ? Op::MadCC : Op::Mad;
      in.type = lastType();
    } else if (base == "min" || base == "max") {
      bool nan = has("NaN");
      in.op = base == "min" ? (nan ? Op::MinNaN : Op::Min) : (nan ? Op::MaxNaN : Op::Max);
      in.type = lastType();
    } else if (base == "setp") {
      in.op = Op::Setp;
      in.type = lastType();
      std::string c = parts.size() > 1 ? parts[1] : "";
      in.unordered = in.type.kind == 'f' && c.size() == 3 && c.back() == 'u';
      if (in.unordered)
        c.pop_back();
      // Each comparison with the types it takes: f(loat), i(nteger) or both.
      using C = Instr::Cmp;
      static const std::map<std::string, std::pair<C, const char *>> kCmps{
          {"eq", {C::Eq, "fi"}}, {"ne", {C::Ne, "fi"}}, {"lt", {C::Lt, "fi"}},
          {"le", {C::Le, "fi"}}, {"gt", {C::Gt, "fi"}}, {"ge", {C::Ge, "fi"}},
          {"lo", {C::Lt, "i"}},  {"ls", {C::Le, "i"}},  {"hi", {C::Gt, "i"}},
          {"hs", {C::Ge, "i"}},  {"num", {C::Num, "f"}}, {"nan", {C::Nan, "f"}}};
      auto it = kCmps.find(c);
      if (it == kCmps.end() || !std::strchr(it->second.second, in.type.kind == 'f' ? 'f' : 'i'))
        return fail("unsupported comparison: " + in.cold->text);
      in.cmp = it->second.first;
    } else if (base == "cvt") {
      in.op = Op::Cvt;
      // 16-bit floats: 'h' bf16, 'e' f16 (packed pairs: x2).
      auto cvtType = [&](const std::string &s) -> Type {
        if (s == "bf16" || s == "bf16x2")
          return {'h', s == "bf16" ? 16 : 32};
        if (s == "f16" || s == "f16x2")
          return {'e', s == "f16" ? 16 : 32};
        return parseType(s, ok);
      };
      const std::string &to = parts[parts.size() - 2];
      in.type = cvtType(to);
      in.from = cvtType(parts.back());
      in.x2 = to == "bf16x2" || to == "f16x2";
      in.half = to == "f16x2";
      in.sat = has("sat");
      for (const char *mode : {"rni", "rmi", "rpi", "rzi"})
        if (has(mode))
          in.toInteger = mode[1];
    } else if (base == "ld" || base == "st") {
      in.op = base == "ld" ? Op::Ld : Op::St;
      in.space = has("global") ? 'g' : has("shared") ? 's' : has("local") ? 'l' : has("param") ? 'p' : 'x';
      if (in.space == 'x')
        return fail("unsupported memory space in: " + in.cold->text);
      in.vec = has("v4") ? 4 : has("v2") ? 2 : 1;
      in.type = lastType();
    } else if (base == "shfl") {
      in.op = Op::Shfl;
      in.shflIdx = has("idx");
      if (!has("sync") || has("bfly") == in.shflIdx)
        return fail("unsupported shuffle: " + in.cold->text);
    } else if (base == "vote") {
      // vote.sync.any.pred / .all.pred d, a, membermask (the whole warp)
      in.op = Op::Vote;
      in.voteAll = has("all");
      if (!has("sync") || !has("pred") || has("any") == in.voteAll)
        return fail("unsupported vote: " + in.cold->text);
    } else if (base == "membar") {
      // The blocks of a launch run one after another here: every store is
      // seen by every later access; a fence has nothing left to order.
      in.op = Op::Membar;
      if (!has("gl"))
        return fail("unsupported membar: " + in.cold->text);
    } else if (base == "prefetch") {
      // prefetch.global.L2 [a]: a hint; here its address must be in bounds.
      in.op = Op::Prefetch;
      in.space = 'g';
      if (!has("global") || !has("L2"))
        return fail("unsupported prefetch: " + in.cold->text);
    } else if (base == "griddepcontrol") {
      // The launches run one after another here: the wait has nothing to
      // wait for, but it marks where a thread may first touch memory.
      in.op = has("wait") ? Op::GridDepWait : Op::GridDepLaunch;
      if (parts.size() != 2 || !rest.empty())
        return fail("unsupported griddepcontrol: " + in.cold->text);
      if (in.op == Op::GridDepWait)
        f->waitsForGrids = true;
    } else if (base == "bar" && has("warp")) {
      in.op = Op::WarpSync; // bar.warp.sync mask: the whole warp meets
      if (!has("sync") || rest != "-1")
        return fail("unsupported warp barrier (whole warps only): " + in.cold->text);
    } else if (base == "atom") {
      // atom.global.add.f32 d, [a], b: d = the old value, [a] += b.
      in.op = Op::AtomAdd;
      in.space = 'g';
      in.type = lastType();
      if (!has("global") || !has("add") || in.type.kind != 'f' || in.type.bits != 32)
        return fail("unsupported atom: " + in.cold->text);
    } else if (base == "cp") {
      // cp.async.{cg,ca}.shared.global [dst], [src], 16; cp.async.commit_group;
      // cp.async.wait_group n.
      if (!has("async"))
        return fail("unsupported instruction: " + in.cold->text);
      if (has("commit_group")) {
        in.op = Op::CpAsyncCommit;
      } else if (has("wait_group")) {
        in.op = Op::CpAsyncWait;
      } else {
        in.op = Op::CpAsync;
        if (!has("shared") || !has("global") || !(has("cg") || has("ca")))
          return fail("unsupported cp.async: " + in.cold->text);
      }
    } else if (base == "ldmatrix") {
      in.op = Op::Ldmatrix;
      if (!has("m8n8") || !has("shared") || !has("b16"))
        return fail("unsupported ldmatrix: " + in.cold->text);
      in.vec = has("x4") ? 4 : has("x2") ? 2 : 1;
      in.trans = has("trans");
    } else if (base == "mma") {
      in.op = Op::Mma;
      if (!has("m16n8k16") || !has("row") || !has("col") || !has("f32"))
        return fail("unsupported mma: " + in.cold->text);
      in.half = has("f16");
    } else {
      return fail("unsupported instruction: " + in.cold->text);
    }
    if (!ok)
      return fail("unsupported type in: " + in.cold->text);
    if (has("rm"))
      in.round = FE_DOWNWARD;
    else if (has("rp"))
      in.round = FE_UPWARD;
    else if (has("rz"))
      in.round = FE_TOWARDZERO;
    std::vector<std::string> ops = split(rest, ',');
    if (ops.size() > 5)
      return fail("too many operands: " + in.cold->text);
    for (const std::string &s : ops) {
      Operand &o = in.ops[in.nops++];
      std::string t = s;
      if (in.op == Op::Shfl && in.nops == 1 && t.find('|') != std::string::npos)
        t = t.substr(0, t.find('|')); // the validity predicate is always true here
      if (!operand(t, o, in))
        return false;
    }
    classifyFast(in, m.symbols);
    f->code.push_back(std::move(in));
    return true;
  }
};

// Registers hold raw bits; floats are reinterpreted, never converted.
template <typename To, typename From> To bitCast(From from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
}
float asF32(uint64_t v) { return bitCast<float>(uint32_t(v)); }
uint64_t fromF32(float f) { return bitCast<uint32_t>(f); }
double asF64(uint64_t v) { return bitCast<double>(v); }
uint64_t fromF64(double d) { return bitCast<uint64_t>(d); }
float bf16ToF32(uint16_t h) { return asF32(uint64_t(h) << 16); }
uint16_t f32ToBf16(float f) {
  uint32_t u = uint32_t(fromF32(f));
  if ((u & 0x7fffffff) > 0x7f800000)
    return uint16_t((u >> 16) | 0x40); // quiet NaN
  return uint16_t((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
float f16ToF32(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023;
  float v;
  if (exp == 0)
    v = std::ldexp(float(man), -24);
  else if (exp == 31)
    v = man ? NAN : INFINITY;
  else
    v = std::ldexp(float(man | 1024), int(exp) - 25);
  return sign ? -v : v;
}
uint16_t f32ToF16(float f) {
  // Through the hardware-independent route: scale into f16's range and round
  // to nearest even with the FPU.
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  float a = std::fabs(f);
  if (std::isnan(f))
    return 0x7e00;
  if (a >= 65520.0f)
    return sign | 0x7c00;
  if (a < std::ldexp(1.0f, -14)) // subnormal: units of 2^-24
    return sign | uint16_t(std::nearbyint(a * std::ldexp(1.0f, 24)));
  int e;
  std::frexp(a, &e); // a = m 2^e, m in [0.5, 1)
  float scaled = std::nearbyint(std::ldexp(a, 11 - e)); // 11 significant bits
  int exp = e - 1 + 15;
  uint32_t man = uint32_t(scaled);
  if (man == 2048) {
    man = 1024;
    ++exp;
  }
  if (exp >= 31)
    return sign | 0x7c00;
  return sign | uint16_t(exp << 10) | uint16_t(man & 1023);
}

uint64_t mask(int bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }
int64_t sext(uint64_t v, int bits) {
  if (bits >= 64)
    return int64_t(v);
  uint64_t m = 1ull << (bits - 1);
  v &= mask(bits);
  return int64_t((v ^ m) - m);
}

/// A cp.async in flight: `bytes` from src (global) to dst (shared).
struct AsyncCopy {
  uint8_t *dst;
  const uint8_t *src;
  size_t bytes;
};

/// A wgmma's result for one accumulator register, written when its group is
/// waited for; `before` is what the register must hold then (its value at
/// the issue, or an earlier wgmma's result for it): PTX lets nothing else
/// write it while the wgmma is in flight.
struct PendingWrite {
  int reg;
  uint64_t value, before;
};

/// A thread's asynchronous operations in PTX's groups (commit_group,
/// wait_group): the group since the last commit, then the committed ones,
/// oldest first.
template <typename Group> struct AsyncGroups {
  Group open{};
  std::vector<Group> committed;
  void commit() {
    committed.push_back(std::move(open));
    open = Group{};
  }
  /// Retires all but the newest `keep` committed groups, oldest first,
  /// through `retire` (false: a fault, which stops it).
  template <typename F> bool wait(uint64_t keep, F retire) {
    while (committed.size() > keep) {
      if (!retire(committed.front()))
        return false;
      committed.erase(committed.begin());
    }
    return true;
  }
};

/// A thread's registers, interleaved with the block's other threads'
/// (register k of thread i at k * threads + i): the threads run the same
/// instructions one after another, so that the next thread's registers are
/// mostly in the cache lines the last one brought in. (One thread's
/// registers after another's, kernels of thousands of registers made the
/// interpreter wait for memory at a third of the instructions it ran.)
struct RegisterFile {
  uint64_t *base = nullptr;
  size_t stride = 1;
  uint64_t &operator[](int k) const { return base[size_t(k) * stride]; }
};

struct Thread {
  uint32_t pc = 0;
  AsyncGroups<std::vector<AsyncCopy>> copies; // cp.async
  // wgmma: their results for this thread, and the wgmma they come from
  // (indices of Block::wgmmaReads).
  struct WgmmaGroup {
    std::vector<PendingWrite> writes;
    std::vector<size_t> reads;
    // A's registers (register-A wgmma) and what they held at the issue: the
    // hardware may read them until the wait, so nothing may write them.
    std::vector<std::pair<int, uint64_t>> aRegisters;
  };
  AsyncGroups<WgmmaGroup> wgmma;
  // Shared memory this thread wrote (stores, landed cp.async) since its last
  // fence.proxy.async, in functions with wgmma: [offset, offset + bytes).
  std::vector<std::pair<size_t, size_t>> unfenced;
  enum State { Running, AtShfl, AtVote, AtMma, AtLdmatrix, AtWarpSync, AtBar, AtWgmma, Done };
  State state = Running;
  bool carry = false;
  bool gridsWaited = false; // has run griddepcontrol.wait
  RegisterFile r;
  uint8_t *local = nullptr;
  unsigned tid[3] = {0, 0, 0};
};

class Block {
public:
  Block(const Module &m, const Function &f, void **params, const unsigned grid[3],
        const unsigned block[3], size_t dynamicShared, std::string &error)
      : m(m), f(f), params(params), error(error),
        dynamicOffset((f.sharedBytes + 1023) / 1024 * 1024 + 16),
        sharedBytes(dynamicOffset + dynamicShared),
        shared(static_cast<uint8_t *>(
                   std::aligned_alloc(kSharedWindow, (sharedBytes + 16 + kSharedWindow - 1) /
                                                         kSharedWindow * kSharedWindow)),
               std::free) {
    for (int k = 0; k < 3; ++k) {
      nctaid[k] = grid[k];
      ntid[k] = block[k];
    }
    threads = block[0] * block[1] * block[2];
    // Zero here, for the launch's first block; run() leaves them as the
    // block before left them for the others: PTX registers start undefined,
    // and clearing a block's thousands of them per thread took a tenth of
    // the emulator's time in kernels of many small blocks.
    regs.resize(size_t(threads) * f.registers);
    locals.resize(size_t(threads) * (f.localBytes + 16));
    ts.resize(threads);
  }

  bool run(unsigned bx, unsigned by, unsigned bz) {
    ctaid[0] = bx;
    ctaid[1] = by;
    ctaid[2] = bz;
    // A block's shared memory holds what the block before left, or nothing
    // defined: with FAKE_CUDA_FILL=nan (as device memory) all NaN bits at
    // every block's start, so that a kernel reading shared memory it never
    // wrote, even to multiply it by zero, shows.
    if (fillSharedWithNan)
      std::memset(shared.get(), 0xff, sharedBytes);
    unfenced.assign(f.wgmma ? sharedBytes : 0, -1);
    copiesInFlight.assign(f.wgmma ? sharedBytes : 0, 0);
    wgmmaReads.clear();
    for (unsigned i = 0; i < threads; ++i) {
      Thread &t = ts[i];
      t = Thread{};
      t.r = RegisterFile{regs.data() + i, threads};
      t.local = locals.data() + size_t(i) * (f.localBytes + 16);
      t.tid[0] = i % ntid[0];
      t.tid[1] = i / ntid[0] % ntid[1];
      t.tid[2] = i / (ntid[0] * ntid[1]);
    }
    for (;;) {
      bool progress = false;
      for (Thread &t : ts)
        if (t.state == Thread::Running) {
          if (!step(t))
            return false;
          progress = true;
        }
      unsigned done = 0, atBar = 0;
      for (unsigned w = 0; w * 32 < threads; ++w) {
        unsigned lo = w * 32, hi = std::min(threads, lo + 32), live = 0, shfl = 0, mma = 0, ldm = 0,
                 wsync = 0, vote = 0;
        for (unsigned i = lo; i < hi; ++i) {
          live += ts[i].state != Thread::Done;
          shfl += ts[i].state == Thread::AtShfl;
          vote += ts[i].state == Thread::AtVote;
          mma += ts[i].state == Thread::AtMma;
          ldm += ts[i].state == Thread::AtLdmatrix;
          wsync += ts[i].state == Thread::AtWarpSync;
        }
        if (live && wsync == live) {
          if (live != 32)
            return fail("bar.warp.sync -1 needs a whole warp");
          for (unsigned i = lo; i < hi; ++i) {
            ts[i].state = Thread::Running;
            ++ts[i].pc;
          }
          progress = true;
        } else if (live && shfl == live) {
          shuffle(lo, hi);
          progress = true;
        } else if (live && vote == live) {
          if (!warpVote(lo, hi))
            return false;
          progress = true;
        } else if (live && mma == live) {
          if (hi - lo != 32 || !matrixMultiply(lo))
            return fail("mma.sync needs a whole warp");
          progress = true;
        } else if (live && ldm == live) {
          if (hi - lo != 32)
            return fail("ldmatrix needs a whole warp");
          if (!loadMatrices(lo))
            return false;
          progress = true;
        }
      }
      // wgmma: every live thread of a warpgroup (4 whole warps) meets.
      for (unsigned lo = 0; lo < threads; lo += 128) {
        unsigned hi = std::min(threads, lo + 128), live = 0, at = 0;
        for (unsigned i = lo; i < hi; ++i) {
          live += ts[i].state != Thread::Done;
          at += ts[i].state == Thread::AtWgmma;
        }
        if (live && at == live) {
          if (live != 128)
            return fail("wgmma needs a whole warpgroup (128 threads)");
          if (!warpgroupMultiply(lo))
            return false;
          progress = true;
        }
      }
      for (Thread &t : ts) {
        done += t.state == Thread::Done;
        atBar += t.state == Thread::AtBar;
      }
      if (done == threads)
        return true;
      if (atBar && atBar + done == threads) {
        for (Thread &t : ts)
          if (t.state == Thread::AtBar) {
            t.state = Thread::Running;
            ++t.pc;
          }
        progress = true;
      }
      if (!progress)
        return fail("threads of a block wait on each other at different collectives");
    }
  }

private:
  const Module &m;
  const Function &f;
  void **params;
  std::string &error;
  unsigned nctaid[3], ntid[3], ctaid[3], threads;
  size_t dynamicOffset, sharedBytes; // the function's own shared memory, then the launch's
  const bool fillSharedWithNan = [] {
    const char *fill = std::getenv("FAKE_CUDA_FILL");
    return fill && std::strcmp(fill, "nan") == 0;
  }();
  std::vector<uint64_t> regs;
  std::vector<uint8_t> locals;
  // The block's shared memory, at a 256 KB boundary of the host's memory, so
  // that the low 18 bits of a shared address are its offset in the block's
  // shared window as on a GPU (wgmma's descriptors hold those, and its
  // swizzles XOR their bits). Dynamic shared memory starts 16 bytes past a
  // 1 KB boundary: aligned as `.align 16` promises, no more, so that a
  // kernel whose swizzles need more must align its tiles itself.
  static constexpr size_t kSharedWindow = size_t(1) << 18;
  std::unique_ptr<uint8_t, void (*)(void *)> shared;
  // Per byte of shared memory (functions with wgmma): the thread whose write
  // it holds while that thread has not run fence.proxy.async since, else -1.
  std::vector<int32_t> unfenced;
  // Per byte of shared memory (functions with wgmma): cp.async copies issued
  // into it and not yet landed.
  std::vector<uint16_t> copiesInFlight;
  // The block's wgmma, in issue order: the operands each reads (by the time
  // of its last thread's wait_group the hardware may read them).
  struct WgmmaRead {
    uint64_t da, db;
    int n;
    bool half; // f16 operands, else bf16
    bool aInRegisters = false, transB = false; // A read at the issue; B N-major
    bool checked = false;
  };
  std::vector<WgmmaRead> wgmmaReads;
  // The allocations the last global accesses hit (base, size), most recent first: a kernel
  // touches a few buffers in turn (input, weight, bias, output), so four save most lookups.
  uint64_t recentAllocations[4][2] = {};
  std::vector<Thread> ts;

  bool fail(const std::string &what) {
    error = "ptx emulator: " + f.name + ": " + what;
    return false;
  }

  uint64_t symbolAddress(const Thread &t, int s) const {
    const Symbol &sym = m.symbols[s];
    switch (sym.kind) {
    case Symbol::Global:
      return sym.address;
    case Symbol::Shared:
      return uint64_t(uintptr_t(shared.get() + (sym.dynamic ? dynamicOffset : sym.offset)));
    case Symbol::Local:
      return uint64_t(uintptr_t(t.local + sym.offset));
    case Symbol::Param:
      return uint64_t(uintptr_t(params[sym.offset]));
    }
    return 0;
  }

  // Registers and immediates inline, the rest out of line: nine in ten
  // operands read are registers or immediates.
  __attribute__((always_inline)) uint64_t value(const Thread &t, const Operand &o) const {
    if (o.kind == Operand::Reg)
      return t.r[o.reg];
    if (o.kind == Operand::Imm)
      return o.imm;
    return otherValue(t, o);
  }

  __attribute__((noinline)) uint64_t otherValue(const Thread &t, const Operand &o) const {
    switch (o.kind) {
    case Operand::Special: {
      int k = o.special;
      if (k < 3)
        return t.tid[k];
      if (k < 6)
        return ntid[k - 3];
      if (k < 9)
        return ctaid[k - 6];
      if (k < 12)
        return nctaid[k - 9];
      return t.tid[0] % 32;
    }
    case Operand::Symbol:
      return symbolAddress(t, o.symbol);
    default:
      return 0;
    }
  }

  uint8_t *address(const Thread &t, const Operand &o) const {
    uint64_t base = o.reg >= 0 ? t.r[o.reg] : symbolAddress(t, o.symbol);
    return reinterpret_cast<uint8_t *>(uintptr_t(base + uint64_t(o.offset)));
  }

  static uint64_t bits(uint64_t v, const Type &ty) { return v & mask(ty.bits); }

  /// Runs `t` until it finishes or reaches a collective. (Its program
  /// counter is a local here, written back when it stops.)
  bool step(Thread &t) {
    const Instr *code = f.code.data();
    const uint32_t size = uint32_t(f.code.size());
    const RegisterFile r = t.r;
    uint32_t pc = t.pc;
    auto stop = [&](Thread::State state) {
      t.pc = pc;
      t.state = state;
      return true;
    };
    for (;;) {
      if (pc >= size)
        return stop(Thread::Done);
      const Instr &in = code[pc];
      if (in.pred >= 0 && (r[in.pred] != 0) == in.predNeg) {
        ++pc;
        continue;
      }
      if (in.fast != Instr::Slow) {
        runFast(r, in);
        ++pc;
        continue;
      }
      switch (in.op) {
      case Op::Bra:
        pc = uint32_t(in.ops[0].label);
        continue;
      case Op::Ret:
        return stop(Thread::Done);
      case Op::Bar:
        return stop(Thread::AtBar);
      case Op::Shfl:
        return stop(Thread::AtShfl);
      case Op::Vote:
        return stop(Thread::AtVote);
      case Op::Mma:
        return stop(Thread::AtMma);
      case Op::Ldmatrix:
        return stop(Thread::AtLdmatrix);
      case Op::WarpSync:
        return stop(Thread::AtWarpSync);
      case Op::Wgmma:
        return stop(Thread::AtWgmma);
      default:
        if (!execute(t, in))
          return false;
        ++pc;
      }
    }
  }

  /// setp's comparison `c` of a and b (a float setp decides NaN operands itself).
  template <typename T> static bool compare(Instr::Cmp c, T a, T b) {
    using C = Instr::Cmp;
    switch (c) {
    case C::Eq: return a == b;
    case C::Ne: return a != b;
    case C::Lt: return a < b;
    case C::Le: return a <= b;
    case C::Gt: return a > b;
    case C::Ge: return a >= b;
    default: return false;
    }
  }

  /// Runs `in` (Instr::fast not Slow) for the thread whose registers are r.
  __attribute__((always_inline)) void runFast(const RegisterFile r, const Instr &in) {
    auto v = [&](int i) __attribute__((always_inline)) {
      const Operand &o = in.ops[i];
      return o.kind == Operand::Reg ? r[o.reg] : o.imm;
    };
    uint64_t &d = r[in.ops[0].reg];
    switch (in.fast) {
    case Instr::AddF32: d = fromF32(asF32(v(1)) + asF32(v(2))); break;
    case Instr::MulF32: d = fromF32(asF32(v(1)) * asF32(v(2))); break;
    case Instr::FmaF32: d = fromF32(std::fma(asF32(v(1)), asF32(v(2)), asF32(v(3)))); break;
    case Instr::AddInt: d = bits(v(1) + v(2), in.type); break;
    case Instr::SubF32: d = fromF32(asF32(v(1)) - asF32(v(2))); break;
    case Instr::SubInt: d = bits(v(1) - v(2), in.type); break;
    case Instr::MulInt: d = bits(v(1) * v(2), in.type); break;
    case Instr::MadInt: d = bits(v(1) * v(2) + v(3), in.type); break;
    case Instr::AndInt: d = bits(v(1) & v(2), in.type); break;
    case Instr::OrInt: d = bits(v(1) | v(2), in.type); break;
    case Instr::XorInt: d = bits(v(1) ^ v(2), in.type); break;
    case Instr::MulWideU: d = uint64_t(uint32_t(v(1))) * uint32_t(v(2)); break;
    case Instr::MulWideS: d = uint64_t(int64_t(int32_t(v(1))) * int32_t(v(2))); break;
    case Instr::SetpS: d = compare(in.cmp, sext(v(1), in.type.bits), sext(v(2), in.type.bits)); break;
    case Instr::SetpU: d = compare(in.cmp, bits(v(1), in.type), bits(v(2), in.type)); break;
    case Instr::Selp: d = v(3) ? v(1) : v(2); break;
    case Instr::CvtInt:
      d = bits(in.from.kind == 's' ? uint64_t(sext(v(1), in.from.bits)) : bits(v(1), in.from), in.type);
      break;
    case Instr::LdParam: {
      const Operand &a = in.ops[1];
      const uint8_t *p = static_cast<const uint8_t *>(params[m.symbols[a.symbol].offset]) + a.offset;
      d = load(p, in.type.bits / 8);
      break;
    }
    case Instr::ShlInt: {
      uint64_t n = uint32_t(v(2));
      d = n >= uint64_t(in.type.bits) ? 0 : bits(v(1) << n, in.type);
      break;
    }
    case Instr::MovInt: d = bits(v(1), in.type); break;
    case Instr::Cvta: d = v(1); break;
    default: break;
    }
  }

  bool execute(Thread &t, const Instr &in) {
    const Type &ty = in.type;
    auto v = [&](int i) __attribute__((always_inline)) { return value(t, in.ops[i]); };
    auto set = [&](uint64_t x) __attribute__((always_inline)) { t.r[in.ops[0].reg] = x; };
    bool isF = ty.kind == 'f';
    auto fop = [&](auto fn32, auto fn64) __attribute__((always_inline)) {
      int saved = in.round != FE_TONEAREST ? fegetround() : 0;
      if (in.round != FE_TONEAREST)
        fesetround(in.round);
      if (ty.bits == 64)
        set(fromF64(fn64()));
      else
        set(fromF32(fn32()));
      if (in.round != FE_TONEAREST)
        fesetround(saved);
    };
#define F1 asF32(v(1))
#define F2 asF32(v(2))
#define F3 asF32(v(3))
#define D1 asF64(v(1))
#define D2 asF64(v(2))
#define D3 asF64(v(3))
    switch (in.op) {
    case Op::Add:
      if (isF)
        fop([&] { return F1 + F2; }, [&] { return D1 + D2; });
      else
        set(bits(v(1) + v(2), ty));
      return true;
    case Op::Sub:
      if (isF)
        fop([&] { return F1 - F2; }, [&] { return D1 - D2; });
      else
        set(bits(v(1) - v(2), ty));
      return true;
    case Op::Mul:
      if (isF)
        fop([&] { return F1 * F2; }, [&] { return D1 * D2; });
      else
        set(bits(v(1) * v(2), ty));
      return true;
    case Op::MulHi: {
      if (ty.bits == 64) { // the upper half of the 128-bit product
        using u128 = unsigned __int128;
        using s128 = __int128;
        u128 p = ty.kind == 's' ? u128(s128(int64_t(v(1))) * s128(int64_t(v(2))))
                                : u128(v(1)) * u128(v(2));
        set(uint64_t(p >> 64));
        return true;
      }
      uint64_t p = ty.kind == 's' ? uint64_t(sext(v(1), ty.bits) * sext(v(2), ty.bits))
                                  : bits(v(1), ty) * bits(v(2), ty);
      set(bits(p >> ty.bits, ty));
      return true;
    }
    case Op::MulWide: {
      Type wide{ty.kind, ty.bits * 2};
      uint64_t p = ty.kind == 's' ? uint64_t(sext(v(1), ty.bits) * sext(v(2), ty.bits))
                                  : bits(v(1), ty) * bits(v(2), ty);
      set(bits(p, wide));
      return true;
    }
    case Op::Mad:
      set(bits(v(1) * v(2) + v(3), ty));
      return true;
    case Op::MadCC: {
      uint64_t lo = bits(v(1) * v(2), ty), sum = lo + bits(v(3), ty);
      t.carry = (sum >> ty.bits) & 1;
      set(bits(sum, ty));
      return true;
    }
    case Op::MadcHi: {
      uint64_t hi = (bits(v(1), ty) * bits(v(2), ty)) >> 32;
      set(bits(hi + bits(v(3), ty) + (t.carry ? 1 : 0), ty));
      return true;
    }
    case Op::Fma:
      fop([&] { return std::fma(F1, F2, F3); }, [&] { return std::fma(D1, D2, D3); });
      return true;
    case Op::Div:
      if (isF)
        fop([&] { return F1 / F2; }, [&] { return D1 / D2; });
      else if (ty.kind == 's')
        set(bits(uint64_t(sext(v(1), ty.bits) / sext(v(2), ty.bits)), ty));
      else
        set(bits(bits(v(1), ty) / bits(v(2), ty), ty));
      return true;
    case Op::Min:
    case Op::Max:
    case Op::MinNaN:
    case Op::MaxNaN: {
      bool isMin = in.op == Op::Min || in.op == Op::MinNaN;
      if (isF) {
        float a = F1, b = F2;
        if (std::isnan(a) || std::isnan(b))
          set(fromF32((in.op == Op::MinNaN || in.op == Op::MaxNaN) ? NAN
                      : std::isnan(a)                              ? b
                                                                   : a));
        else
          set(fromF32(isMin ? std::fmin(a, b) : std::fmax(a, b)));
      } else if (ty.kind == 's') {
        int64_t a = sext(v(1), ty.bits), b = sext(v(2), ty.bits);
        set(bits(uint64_t(isMin ? std::min(a, b) : std::max(a, b)), ty));
      } else {
        uint64_t a = bits(v(1), ty), b = bits(v(2), ty);
        set(isMin ? std::min(a, b) : std::max(a, b));
      }
      return true;
    }
    case Op::Neg:
      if (isF)
        set(ty.bits == 64 ? fromF64(-D1) : fromF32(-F1));
      else
        set(bits(0 - v(1), ty));
      return true;
    case Op::Abs:
      if (isF)
        set(fromF32(std::fabs(F1)));
      else
        set(bits(uint64_t(std::llabs(sext(v(1), ty.bits))), ty));
      return true;
    case Op::And:
      set(ty.kind == 'p' ? (v(1) && v(2)) : bits(v(1) & v(2), ty));
      return true;
    case Op::Or:
      set(ty.kind == 'p' ? (v(1) || v(2)) : bits(v(1) | v(2), ty));
      return true;
    case Op::Xor:
      set(ty.kind == 'p' ? ((v(1) != 0) != (v(2) != 0)) : bits(v(1) ^ v(2), ty));
      return true;
    case Op::Not:
      set(ty.kind == 'p' ? !v(1) : bits(~v(1), ty));
      return true;
    case Op::Shl: {
      uint64_t n = uint32_t(v(2));
      set(n >= uint64_t(ty.bits) ? 0 : bits(v(1) << n, ty));
      return true;
    }
    case Op::Shr: {
      uint64_t n = uint32_t(v(2));
      if (ty.kind == 's') {
        int64_t a = sext(v(1), ty.bits);
        set(bits(uint64_t(n >= uint64_t(ty.bits) ? (a < 0 ? -1 : 0) : a >> n), ty));
      } else {
        set(n >= uint64_t(ty.bits) ? 0 : bits(v(1), ty) >> n);
      }
      return true;
    }
    case Op::Shf: { // shf.l.wrap.b32 d, a, b, c: upper half of (b:a) << (c & 31)
      if (!in.shiftLeft)
        return fail("unsupported funnel shift: " + in.cold->text);
      uint64_t wide = (uint64_t(uint32_t(v(2))) << 32) | uint32_t(v(1));
      set(uint32_t((wide << (uint32_t(v(3)) & 31)) >> 32));
      return true;
    }
    case Op::Bfe: {
      uint32_t pos = uint32_t(v(2)) & 0xff, len = uint32_t(v(3)) & 0xff;
      uint64_t a = bits(v(1), ty);
      if (ty.kind == 's')
        return fail("signed bfe unsupported");
      set(len == 0 || pos >= uint32_t(ty.bits) ? 0 : (a >> pos) & mask(std::min<int>(len, 64)));
      return true;
    }
    case Op::Selp:
      set(v(3) ? v(1) : v(2));
      return true;
    case Op::Setp: {
      using C = Instr::Cmp;
      bool r;
      if (isF) {
        double a = ty.bits == 64 ? D1 : F1, b = ty.bits == 64 ? D2 : F2;
        bool unordered = std::isnan(a) || std::isnan(b);
        if (in.cmp == C::Num)
          r = !unordered;
        else if (in.cmp == C::Nan)
          r = unordered;
        else if (unordered)
          r = in.unordered;
        else
          r = compare(in.cmp, a, b);
      } else if (ty.kind == 's') {
        r = compare(in.cmp, sext(v(1), ty.bits), sext(v(2), ty.bits));
      } else {
        r = compare(in.cmp, bits(v(1), ty), bits(v(2), ty));
      }
      set(r);
      return true;
    }
    case Op::Mov: {
      const Operand &d = in.ops[0], &s = in.ops[1];
      int w = ty.bits;
      if (d.kind == Operand::Vec) { // split a register into parts
        int part = w / d.count;
        uint64_t x = v(1);
        for (int k = 0; k < d.count; ++k)
          t.r[d.regs[k]] = (x >> (k * part)) & mask(part);
      } else if (s.kind == Operand::Vec) { // pack parts into a register
        int part = w / s.count;
        uint64_t x = 0;
        for (int k = 0; k < s.count; ++k)
          x |= (t.r[s.regs[k]] & mask(part)) << (k * part);
        set(x);
      } else {
        set(ty.kind == 'p' ? v(1) != 0 : bits(v(1), ty));
      }
      return true;
    }
    case Op::Cvta:
      set(v(1));
      return true;
    case Op::Cvt:
      return convert(t, in);
    case Op::Ld:
    case Op::St:
    case Op::AtomAdd:
      return memory(t, in);
    case Op::Membar:
    case Op::GridDepLaunch:
      return true;
    case Op::GridDepWait:
      t.gridsWaited = true;
      return true;
    case Op::Prefetch:
      if (!inBounds(t, 'g', address(t, in.ops[0]), 1))
        return fail("prefetch outside every allocation" + where(t) + ": " + in.cold->text);
      return true;
    case Op::CpAsync:
      return asyncCopy(t, in);
    case Op::CpAsyncCommit:
      t.copies.commit();
      return true;
    case Op::CpAsyncWait:
      // All but the newest n committed groups land, in order.
      return t.copies.wait(v(0), [&](const std::vector<AsyncCopy> &group) {
        for (const AsyncCopy &c : group) {
          memcpy(c.dst, c.src, c.bytes);
          wroteShared(t, c.dst, c.bytes);
          copyInFlight(c.dst, c.bytes, -1);
        }
        return true;
      });
    case Op::WgmmaFence:
      return true;
    case Op::FenceProxyAsync:
      // This thread's generic writes to shared memory are now seen by the
      // async proxy (wgmma's operand reads).
      for (auto [at, n] : t.unfenced)
        for (size_t k = at; k < at + n; ++k)
          if (unfenced[k] == int32_t(&t - ts.data()))
            unfenced[k] = -1;
      t.unfenced.clear();
      return true;
    case Op::WgmmaCommit:
      t.wgmma.commit();
      return true;
    case Op::WgmmaWait:
      // All but the newest n committed groups write their accumulators.
      return t.wgmma.wait(v(0), [&](const Thread::WgmmaGroup &group) {
        // Until now the hardware may still have been reading the operands:
        // no copy may have been on its way into them since the issue.
        for (size_t r : group.reads)
          if (!wgmmaReads[r].checked) {
            wgmmaReads[r].checked = true;
            if (!readOperands(wgmmaReads[r], " at its wait_group" + where(t)))
              return false;
          }
        for (const auto &[reg, held] : group.aRegisters)
          if (t.r[reg] != held)
            return fail("a wgmma A register was written while the wgmma was in flight" +
                        where(t) + ": " + in.cold->text);
        for (const PendingWrite &w : group.writes) {
          if (t.r[w.reg] != w.before)
            return fail("a wgmma accumulator register was written while the wgmma was in "
                        "flight" + where(t) + ": " + in.cold->text);
          t.r[w.reg] = w.value;
        }
        return true;
      });
    case Op::Rcp:
      fop([&] { return 1.0f / F1; }, [&] { return 1.0 / D1; });
      return true;
    case Op::Rsqrt:
      fop([&] { return 1.0f / std::sqrt(F1); }, [&] { return 1.0 / std::sqrt(D1); });
      return true;
    case Op::Sqrt:
      fop([&] { return std::sqrt(F1); }, [&] { return std::sqrt(D1); });
      return true;
    case Op::Ex2: {
      float x = std::exp2(F1);
      if (in.ftz && std::fpclassify(x) == FP_SUBNORMAL)
        x = 0.0f;
      set(fromF32(x));
      return true;
    }
    case Op::Copysign: // copysign d, a, b: b with a's sign
      set(fromF32(std::copysign(F2, F1)));
      return true;
    default:
      return fail("cannot execute: " + in.cold->text);
    }
#undef F1
#undef F2
#undef F3
#undef D1
#undef D2
#undef D3
  }

  bool convert(Thread &t, const Instr &in) {
    const Type &to = in.type, &from = in.from;
    uint64_t a = value(t, in.ops[1]);
    uint64_t &d = t.r[in.ops[0].reg];
    if (in.x2) { // cvt.rn.bf16x2.f32 d, a, b: a in the upper half
      float hi = asF32(a), lo = asF32(value(t, in.ops[2]));
      uint16_t h = in.half ? f32ToF16(hi) : f32ToBf16(hi), l = in.half ? f32ToF16(lo) : f32ToBf16(lo);
      d = (uint64_t(h) << 16) | l;
      return true;
    }
    // Read the source as a double (floats) or an integer.
    auto isFloat = [](const Type &ty) { return ty.kind == 'f' || ty.kind == 'h' || ty.kind == 'e'; };
    if (isFloat(from)) {
      double x = from.kind == 'h'   ? bf16ToF32(uint16_t(a))
                 : from.kind == 'e' ? f16ToF32(uint16_t(a))
                 : from.bits == 64  ? asF64(a)
                                    : asF32(a);
      auto integral = [&](double v) {
        switch (in.toInteger) {
        case 'n':
          return std::nearbyint(v); // ties to even, the default rounding mode
        case 'm':
          return std::floor(v);
        case 'p':
          return std::ceil(v);
        default:
          return std::trunc(v);
        }
      };
      if (isFloat(to)) {
        if (in.toInteger)
          x = integral(x);
        if (in.sat)
          x = std::isnan(x) ? 0.0 : std::fmin(1.0, std::fmax(0.0, x));
        if (to.kind == 'h')
          d = f32ToBf16(float(x));
        else if (to.kind == 'e')
          d = f32ToF16(float(x));
        else if (to.bits == 64)
          d = fromF64(x);
        else
          d = fromF32(float(x)); // f64 -> f32 rounds to nearest
        return true;
      }
      // Float to integer: .rni rounds to nearest even, otherwise toward zero.
      if (std::isnan(x)) {
        d = 0;
        return true;
      }
      double r = integral(x);
      if (to.kind == 's') {
        double lo = -std::ldexp(1.0, to.bits - 1), hi = std::ldexp(1.0, to.bits - 1) - 1;
        d = bits(uint64_t(int64_t(std::fmin(hi, std::fmax(lo, r)))), to);
      } else {
        double hi = std::ldexp(1.0, to.bits) - 1;
        d = bits(uint64_t(std::fmin(hi, std::fmax(0.0, r))), to);
      }
      return true;
    }
    // Integer source.
    int64_t si = sext(a, from.bits);
    uint64_t ui = bits(a, from);
    if (isFloat(to)) {
      double x = from.kind == 's' ? double(si) : double(ui);
      if (to.bits == 64)
        d = fromF64(x);
      else
        d = fromF32(from.kind == 's' ? float(si) : float(ui));
      return true;
    }
    d = bits(from.kind == 's' ? uint64_t(si) : ui, to);
    return true;
  }

  /// Whether [p, p + n) lies inside what `space` addresses: a device
  /// allocation or a module global, the block's shared memory, the thread's
  /// local depot. (A GPU faults on some of these and silently reads a
  /// neighbour's data on others; both are kernel bugs.)
  bool inBounds(const Thread &t, char space, const uint8_t *p, size_t n) {
    uint64_t a = uint64_t(uintptr_t(p));
    auto within = [&](uint64_t base, uint64_t size) { return a >= base && a + n <= base + size; };
    switch (space) {
    case 's':
      return within(uint64_t(uintptr_t(shared.get())), sharedBytes);
    case 'l':
      return within(uint64_t(uintptr_t(t.local)), f.localBytes);
    case 'g':
      for (const auto &r : recentAllocations)
        if (within(r[0], r[1]))
          return true;
      for (const Symbol &s : m.symbols)
        if (s.kind == Symbol::Global && within(s.address, s.bytes))
          return true;
      if (!ptx_emulator_allocation)
        return true;
      uint64_t base, size;
      if (!ptx_emulator_allocation(a, n, &base, &size))
        return false;
      memmove(recentAllocations[1], recentAllocations[0], 3 * sizeof(recentAllocations[0]));
      recentAllocations[0][0] = base;
      recentAllocations[0][1] = size;
      return true;
    }
    return true;
  }

  /// " (thread x,y,z of block x,y,z)": where a fault happened.
  std::string where(const Thread &t) const {
    char at[64];
    snprintf(at, sizeof(at), " (thread %u,%u,%u of block %u,%u,%u)", t.tid[0], t.tid[1], t.tid[2],
             ctaid[0], ctaid[1], ctaid[2]);
    return at;
  }

  // Copies of a constant size (a memcpy of a variable one is a library
  // call); little-endian, so the low bytes of x are the value's.
  static uint64_t load(const uint8_t *at, int bytes) {
    uint64_t x = 0;
    switch (bytes) {
    case 1: memcpy(&x, at, 1); break;
    case 2: memcpy(&x, at, 2); break;
    case 4: memcpy(&x, at, 4); break;
    case 8: memcpy(&x, at, 8); break;
    default: memcpy(&x, at, bytes);
    }
    return x;
  }

  static void store(uint8_t *at, uint64_t x, int bytes) {
    switch (bytes) {
    case 1: memcpy(at, &x, 1); break;
    case 2: memcpy(at, &x, 2); break;
    case 4: memcpy(at, &x, 4); break;
    case 8: memcpy(at, &x, 8); break;
    default: memcpy(at, &x, bytes);
    }
  }

  bool memory(Thread &t, const Instr &in) {
    int bytes = in.type.bits / 8;
    const bool loads = in.op != Op::St; // atom: d, [a], b
    const Operand &addr = loads ? in.ops[1] : in.ops[0];
    const Operand &reg = loads ? in.ops[0] : in.ops[1];
    uint8_t *p = address(t, addr);
    int n = reg.kind == Operand::Vec ? reg.count : 1;
    if (in.space == 'p' && in.op == Op::Ld && addr.symbol >= 0) {
      const Symbol &s = m.symbols[addr.symbol];
      if (s.kind != Symbol::Param)
        return fail("param load from a non-parameter: " + in.cold->text);
      p = static_cast<uint8_t *>(params[s.offset]) + addr.offset;
    } else {
      // PTX asks every access, vectors whole, to be naturally aligned.
      size_t total = size_t(bytes) * n;
      auto fault = [&](const char *what) {
        return fail(what + std::to_string(total) + "-byte access" + where(t) + ": " + in.cold->text);
      };
      if (uintptr_t(p) % total)
        return fault("misaligned ");
      if (in.space == 'g' && f.waitsForGrids && !t.gridsWaited)
        return fault("before griddepcontrol.wait, a ");
      if (!inBounds(t, in.space, p, total))
        return fault("out-of-bounds ");
    }
    if (in.op == Op::AtomAdd) {
      float old;
      memcpy(&old, p, 4);
      float sum = old + asF32(value(t, in.ops[2]));
      memcpy(p, &sum, 4);
      t.r[reg.reg] = fromF32(old);
      return true;
    }
    for (int k = 0; k < n; ++k) {
      const Operand &r = reg;
      uint8_t *at = p + k * bytes;
      if (in.op == Op::Ld) {
        t.r[r.kind == Operand::Vec ? r.regs[k] : r.reg] = load(at, bytes);
      } else {
        uint64_t x = r.kind != Operand::Vec ? value(t, r)
                     : r.regs[k] >= 0        ? t.r[r.regs[k]]
                                             : r.imms[k];
        store(at, x, bytes);
        if (in.space == 's')
          wroteShared(t, at, bytes);
      }
    }
    return true;
  }

  // cp.async.*.shared.global [dst], [src], n (n of 4, 8, 16 bytes): checked
  // as a load and a store of n bytes now, copied when its group is waited for.
  bool asyncCopy(Thread &t, const Instr &in) {
    uint64_t n = value(t, in.ops[2]);
    if (in.nops != 3 || (n != 4 && n != 8 && n != 16))
      return fail("unsupported cp.async: " + in.cold->text);
    uint8_t *dst = address(t, in.ops[0]);
    const uint8_t *src = address(t, in.ops[1]);
    auto fault = [&](const char *what) { return fail(what + where(t) + ": " + in.cold->text); };
    if (uintptr_t(dst) % n || uintptr_t(src) % n)
      return fault("misaligned cp.async");
    if (!inBounds(t, 's', dst, n) || !inBounds(t, 'g', src, n))
      return fault("out-of-bounds cp.async");
    if (f.waitsForGrids && !t.gridsWaited)
      return fault("cp.async before griddepcontrol.wait");
    t.copies.open.push_back({dst, src, size_t(n)});
    copyInFlight(dst, n, 1);
    return true;
  }

  /// Counts a cp.async into shared memory as issued (+1) or landed (-1), in
  /// functions with wgmma (whose operands no copy may land in while it runs).
  void copyInFlight(const uint8_t *dst, size_t n, int delta) {
    if (!f.wgmma)
      return;
    size_t at = size_t(dst - shared.get());
    for (size_t k = at; k < at + n; ++k)
      copiesInFlight[k] = uint16_t(copiesInFlight[k] + delta);
  }

  /// Notes a generic-proxy write of shared memory (functions with wgmma), which
  /// wgmma may read only after the writer's fence.proxy.async.
  void wroteShared(Thread &t, const uint8_t *p, size_t n) {
    if (!f.wgmma)
      return;
    size_t at = size_t(p - shared.get());
    t.unfenced.push_back({at, n});
    for (size_t k = at; k < at + n; ++k)
      unfenced[k] = int32_t(&t - ts.data());
  }

  // vote.sync.any.pred / .all.pred d, a, membermask: every live lane gets
  // whether a holds in some / every live lane (membermask: the whole warp,
  // -1; lanes that have exited do not take part, as on a GPU).
  bool warpVote(unsigned lo, unsigned hi) {
    bool any = false, all = true;
    for (unsigned i = lo; i < hi; ++i)
      if (ts[i].state == Thread::AtVote) {
        const Instr &in = f.code[ts[i].pc];
        if (in.nops != 3 || in.ops[2].kind != Operand::Imm || uint32_t(in.ops[2].imm) != ~0u)
          return fail("vote.sync needs the whole warp's mask (-1): " + in.cold->text);
        bool a = value(ts[i], in.ops[1]) & 1;
        any |= a;
        all &= a;
      }
    for (unsigned i = lo; i < hi; ++i) {
      Thread &t = ts[i];
      if (t.state != Thread::AtVote)
        continue;
      const Instr &in = f.code[t.pc];
      t.r[in.ops[0].reg] = in.voteAll ? all : any;
      t.state = Thread::Running;
      ++t.pc;
    }
    return true;
  }

  // shfl.sync.bfly.b32 d, a, b, c, membermask: lane i gets lane (i ^ b)'s a;
  // shfl.sync.idx.b32: lane b's (within lane i's segment).
  void shuffle(unsigned lo, unsigned hi) {
    uint64_t a[32] = {};
    bool present[32] = {}; // (states change below, as lanes are served)
    for (unsigned i = lo; i < hi; ++i)
      if (ts[i].state == Thread::AtShfl) {
        a[i - lo] = uint32_t(value(ts[i], f.code[ts[i].pc].ops[1]));
        present[i - lo] = true;
      }
    for (unsigned i = lo; i < hi; ++i) {
      Thread &t = ts[i];
      if (t.state != Thread::AtShfl)
        continue;
      const Instr &in = f.code[t.pc];
      // c packs the segment mask (bits 8-12) and the clamp (bits 0-4).
      unsigned lane = i - lo, c = uint32_t(value(t, in.ops[3]));
      unsigned segment = (c >> 8) & 31, clamp = c & 31;
      unsigned b = uint32_t(value(t, in.ops[2])) & 31;
      unsigned src = in.shflIdx ? (lane & segment) | (b & ~segment & 31) : lane ^ b;
      unsigned maxLane = (lane & segment) | (clamp & ~segment);
      uint64_t x = src <= maxLane && present[src] ? a[src] : a[lane];
      t.r[in.ops[0].reg] = x;
      t.state = Thread::Running;
      ++t.pc;
    }
  }

  // ldmatrix.sync.aligned.m8n8.x{1,2,4}.shared.b16 {d..}, [a]: lane 8 i + j
  // gives the address of row j of matrix i (16 bytes, 16-byte aligned);
  // lane l receives in register i row l / 4 of matrix i, elements 2 (l % 4)
  // and 2 (l % 4) + 1, the lower-indexed element in the low half (.trans,
  // which tbc does not emit, is refused as an unknown modifier).
  bool loadMatrices(unsigned lo) {
    const Instr &in = f.code[ts[lo].pc];
    uint8_t *rows[4][8];
    for (int i = 0; i < in.vec; ++i)
      for (int j = 0; j < 8; ++j) {
        const Thread &t = ts[lo + 8 * i + j];
        uint8_t *p = address(t, f.code[t.pc].ops[1]);
        if (uintptr_t(p) % 16 || !inBounds(t, 's', p, 16))
          return fail(std::string(uintptr_t(p) % 16 ? "misaligned" : "out-of-bounds") +
                      " ldmatrix row (lane " + std::to_string(8 * i + j) + "): " + in.cold->text);
        rows[i][j] = p;
      }
    for (unsigned lane = 0; lane < 32; ++lane) {
      Thread &t = ts[lo + lane];
      const Operand &d = f.code[t.pc].ops[0];
      if ((d.kind == Operand::Vec ? d.count : 1) != in.vec)
        return fail("ldmatrix destination count: " + in.cold->text);
      unsigned g = lane / 4, q = lane % 4;
      for (int i = 0; i < in.vec; ++i) {
        uint32_t pair;
        if (in.trans) { // column g of the matrix, rows 2q and 2q + 1
          uint16_t lo16, hi16;
          memcpy(&lo16, rows[i][2 * q] + 2 * g, 2);
          memcpy(&hi16, rows[i][2 * q + 1] + 2 * g, 2);
          pair = uint32_t(lo16) | uint32_t(hi16) << 16;
        } else {
          memcpy(&pair, rows[i][g] + 4 * q, 4);
        }
        t.r[d.kind == Operand::Vec ? d.regs[i] : d.reg] = pair;
      }
      t.state = Thread::Running;
      ++t.pc;
    }
    return true;
  }

  /// Lane `lane`'s part of a 16 x 16 A fragment of 16-bit pairs (registers
  /// `a`), as mma.sync m16n8k16 and a register-A wgmma (each warp's 16 rows)
  /// take it: a0:(g, 2q..2q+1) a1:(g+8, 2q..) a2:(g, 2q+8..) a3:(g+8,
  /// 2q+8..), group g = lane / 4, thread q = lane % 4.
  static void aFragment(const uint64_t (&a)[4], unsigned lane, bool f16, float (*A)[16]) {
    unsigned g = lane / 4, q = lane % 4;
    for (int e = 0; e < 4; ++e)
      for (int h = 0; h < 2; ++h) {
        uint16_t bits = uint16_t(a[e] >> (16 * h));
        A[g + (e % 2 ? 8 : 0)][2 * q + (e >= 2 ? 8 : 0) + h] = f16 ? f16ToF32(bits) : bf16ToF32(bits);
      }
  }

  // mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: the fragment layout of
  // PTX's ISA guide (group g = lane / 4, thread q = lane % 4): A as
  // aFragment; B b0:(k 2q..2q+1, n g) b1:(k 2q+8.., n g); C/D c0:(g, 2q)
  // c1:(g, 2q+1) c2:(g+8, 2q) c3:(g+8, 2q+1).
  bool matrixMultiply(unsigned lo) {
    float A[16][16], B[16][8], C[16][8];
    const Instr &in = f.code[ts[lo].pc];
    auto half = [&](uint64_t reg, int k) {
      uint16_t h = uint16_t(reg >> (16 * k));
      return in.half ? f16ToF32(h) : bf16ToF32(h);
    };
    for (unsigned lane = 0; lane < 32; ++lane) {
      const Thread &t = ts[lo + lane];
      const Instr &li = f.code[t.pc];
      const Operand &d = li.ops[0], &a = li.ops[1], &b = li.ops[2], &c = li.ops[3];
      if (d.count != 4 || a.count != 4 || b.count != 2 || c.count != 4)
        return false;
      unsigned g = lane / 4, q = lane % 4;
      const uint64_t aRegs[4] = {t.r[a.regs[0]], t.r[a.regs[1]], t.r[a.regs[2]], t.r[a.regs[3]]};
      aFragment(aRegs, lane, in.half, A);
      for (int k = 0; k < 2; ++k) {
        B[2 * q + k][g] = half(t.r[b.regs[0]], k);
        B[2 * q + 8 + k][g] = half(t.r[b.regs[1]], k);
      }
      C[g][2 * q] = asF32(t.r[c.regs[0]]);
      C[g][2 * q + 1] = asF32(t.r[c.regs[1]]);
      C[g + 8][2 * q] = asF32(t.r[c.regs[2]]);
      C[g + 8][2 * q + 1] = asF32(t.r[c.regs[3]]);
    }
    float D[16][8];
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 8; ++j) {
        float s = C[i][j];
        for (int k = 0; k < 16; ++k)
          s = std::fma(A[i][k], B[k][j], s);
        D[i][j] = s;
      }
    for (unsigned lane = 0; lane < 32; ++lane) {
      Thread &t = ts[lo + lane];
      const Operand &d = f.code[t.pc].ops[0];
      unsigned g = lane / 4, q = lane % 4;
      t.r[d.regs[0]] = fromF32(D[g][2 * q]);
      t.r[d.regs[1]] = fromF32(D[g][2 * q + 1]);
      t.r[d.regs[2]] = fromF32(D[g + 8][2 * q]);
      t.r[d.regs[3]] = fromF32(D[g + 8][2 * q + 1]);
      t.state = Thread::Running;
      ++t.pc;
    }
    return true;
  }

  /// The shared-memory element (row r, k) of a K-major wgmma operand whose
  /// matrix descriptor is `desc` (PTX ISA, "Matrix Descriptor Format"): start
  /// address, leading and stride byte offsets in 16-byte units, the layout in
  /// bits 62-63 (0 no swizzle: 8 x 16-byte core matrices, LBO apart along k
  /// and SBO along r; 1/2/3: 128/64/32-byte swizzle, rows that wide, 8-row
  /// groups SBO apart, 16-byte chunks XOR the row bits of the absolute
  /// address). Null (with the error set) where it falls outside the block's
  /// shared memory.
  const uint8_t *operandElement(uint64_t desc, unsigned r, unsigned k, const char *which,
                                bool nMajor = false) {
    size_t start = (desc & 0x3fff) << 4, lbo = ((desc >> 16) & 0x3fff) << 4,
           sbo = ((desc >> 32) & 0x3fff) << 4;
    unsigned layout = unsigned(desc >> 62);
    size_t at;
    if (nMajor) {
      // N-major (B transposed): rows of the swizzle's width run along n,
      // 8 of them (k) a group SBO apart, the next width's worth of n LBO on
      // (CUTLASS's and ThunderKittens' "MN-major" canonical layouts).
      if (layout == 0) {
        fail("unsupported wgmma: an N-major B without a swizzle");
        return nullptr;
      }
      unsigned width = 256 >> layout, bits = 4 - layout, perRow = width / 2;
      at = start + r / perRow * lbo + k / 8 * sbo + k % 8 * width + r % perRow * 2;
      at ^= ((at >> 7) & ((1u << bits) - 1)) << 4;
    } else if (layout == 0) {
      at = start + r / 8 * sbo + k / 8 * lbo + r % 8 * 16 + k % 8 * 2;
    } else {
      unsigned width = 256 >> layout, bits = 4 - layout; // 128 B: 3 bits of chunk
      at = start + r / 8 * sbo + r % 8 * width + k * 2;
      at ^= ((at >> 7) & ((1u << bits) - 1)) << 4;
    }
    if (at + 2 > sharedBytes) {
      fail(std::string("wgmma ") + which + " operand outside shared memory (row " +
           std::to_string(r) + ", k " + std::to_string(k) + ")");
      return nullptr;
    }
    if (unfenced[at] >= 0 || unfenced[at + 1] >= 0) {
      fail(std::string("wgmma reads its ") + which + " operand (row " + std::to_string(r) +
           ", k " + std::to_string(k) +
           ") where a thread wrote without fence.proxy.async since");
      return nullptr;
    }
    return shared.get() + at;
  }

  // wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16 (.f16.f16) of the warpgroup
  // from thread `lo`: D (64 x N) = A (64 x 16, descriptor a) B (16 x N,
  // descriptor b, K-major: column n's 16 k contiguous) + (scale-d ? C : 0),
  // f32 accumulation in k order. Thread i of the warpgroup (warp w = i / 32,
  // g = i % 32 / 4, q = i % 4) holds in accumulators 4j .. 4j + 3 the
  // elements (16w + g, 8j + 2q), (16w + g, 8j + 2q + 1), (16w + g + 8, 8j +
  // 2q), (16w + g + 8, 8j + 2q + 1). Computed now from shared memory as it
  // is, the result reaches the registers at wgmma.wait_group; a later wgmma
  // of the same registers reads this one's result (they chain in order).
  bool warpgroupMultiply(unsigned lo) {
    const Instr &in = f.code[ts[lo].pc];
    const Thread &first = ts[lo];
    uint64_t da = value(first, in.ops[0]), db = value(first, in.ops[1]);
    for (unsigned i = lo; i < lo + 128; ++i) {
      const Thread &t = ts[i];
      const Instr &ti = f.code[t.pc];
      if (&ti != &in || value(t, ti.ops[0]) != da || value(t, ti.ops[1]) != db)
        return fail("the threads of a warpgroup run different wgmma" + where(t) + ": " + in.cold->text);
    }
    for (uint64_t d : {da, db})
      if ((d >> 49) & 7)
        return fail("wgmma descriptor with a base offset: " + in.cold->text);
    const int N = in.wgmmaN;
    WgmmaRead read{da, db, N, in.half, !in.cold->wgmmaA.empty(), in.wgmmaTransB};
    float A[64][16], B[256][16];
    if (!readOperands(read, " at its issue" + where(first), A, B))
      return false;
    if (read.aInRegisters) // mma.sync's A fragment, warp w's rows 16 w on
      for (unsigned i = 0; i < 128; ++i) {
        const Thread &t = ts[lo + i];
        const uint64_t aRegs[4] = {t.r[in.cold->wgmmaA[0]], t.r[in.cold->wgmmaA[1]], t.r[in.cold->wgmmaA[2]],
                                   t.r[in.cold->wgmmaA[3]]};
        aFragment(aRegs, i % 32, in.half, A + 16 * (i / 32));
      }
    float scale = float(int64_t(value(first, in.ops[3]))) * float(int64_t(value(first, in.ops[4])));
    bool accumulate = value(first, in.ops[2]) != 0;
    for (unsigned i = 0; i < 128; ++i) {
      Thread &t = ts[lo + i];
      unsigned w = i / 32, g = i % 32 / 4, q = i % 4;
      for (int j = 0; j < N / 8; ++j)
        for (int e = 0; e < 4; ++e) {
          unsigned row = 16 * w + g + (e >= 2 ? 8 : 0), col = 8 * j + 2 * q + e % 2;
          int reg = in.cold->accumulators[4 * j + e];
          uint64_t before = accumulatorIn(t, reg); // what the register holds when this lands
          float c = accumulate ? asF32(before) : 0.0f;
          for (int k = 0; k < 16; ++k)
            c = std::fma(scale * A[row][k], B[col][k], c);
          t.wgmma.open.writes.push_back({reg, fromF32(c), before});
        }
      t.wgmma.open.reads.push_back(wgmmaReads.size());
      for (int reg : in.cold->wgmmaA)
        t.wgmma.open.aRegisters.push_back({reg, t.r[reg]});
      t.state = Thread::Running;
      ++t.pc;
    }
    wgmmaReads.push_back(read);
    return true;
  }

  /// The operands of wgmma `r` (A 64 x 16, B n x 16), into `A` and `B`
  /// where given, failing where one is out of place (operandElement) or a
  /// cp.async is on its way into it (`when`: at the issue, or at its
  /// wait_group): a copy landing while the hardware reads would race it.
  bool readOperands(const WgmmaRead &r, const std::string &when, float (*A)[16] = nullptr,
                    float (*B)[16] = nullptr) {
    for (int which = r.aInRegisters ? 1 : 0; which < 2; ++which)
      for (unsigned row = 0; row < (which ? unsigned(r.n) : 64u); ++row)
        for (unsigned k = 0; k < 16; ++k) {
          const uint8_t *p = operandElement(which ? r.db : r.da, row, k, which ? "B" : "A",
                                            which && r.transB);
          if (!p)
            return false;
          size_t at = size_t(p - shared.get());
          if (copiesInFlight[at] || copiesInFlight[at + 1])
            return fail(std::string("a cp.async in flight writes the ") + (which ? "B" : "A") +
                        " operand of a wgmma (row " + std::to_string(row) + ", k " +
                        std::to_string(k) + ")" + when);
          if (auto *to = which ? B : A) {
            uint16_t h;
            memcpy(&h, p, 2);
            to[row][k] = r.half ? f16ToF32(h) : bf16ToF32(h);
          }
        }
    return true;
  }

  /// The newest value of accumulator `reg` for a wgmma: an earlier wgmma's
  /// result still in flight, else the register.
  static uint64_t accumulatorIn(const Thread &t, int reg) {
    for (auto w = t.wgmma.open.writes.rbegin(); w != t.wgmma.open.writes.rend(); ++w)
      if (w->reg == reg)
        return w->value;
    for (auto g = t.wgmma.committed.rbegin(); g != t.wgmma.committed.rend(); ++g)
      for (auto w = g->writes.rbegin(); w != g->writes.rend(); ++w)
        if (w->reg == reg)
          return w->value;
    return t.r[reg];
  }
};

} // namespace

struct PtxModule {
  Module m;
};

extern "C" {

/// Parses `text`; null with `error` (static storage) set on failure.
void *ptx_emulator_load(const char *text, const char **error) {
  static std::string message;
  auto pm = std::make_unique<PtxModule>();
  Parser p(pm->m, message);
  if (!p.parse(text)) {
    *error = message.c_str();
    return nullptr;
  }
  return pm.release();
}

/// The function named `name`, or null.
void *ptx_emulator_function(void *module, const char *name) {
  for (auto &f : static_cast<PtxModule *>(module)->m.functions)
    if (f->name == name)
      return f.get();
  return nullptr;
}

/// Runs `fn` over the grid, block by block, with `dynamicShared` bytes of
/// dynamic shared memory (`.extern .shared`); 0 on success, else -1 with
/// `error` set.
int ptx_emulator_launch(void *module, void *fn, const unsigned grid[3], const unsigned block[3],
                        unsigned dynamicShared, void **params, const char **error) {
  static std::string message;
  const Module &m = static_cast<PtxModule *>(module)->m;
  Block b(m, *static_cast<Function *>(fn), params, grid, block, dynamicShared, message);
  for (unsigned z = 0; z < grid[2]; ++z)
    for (unsigned y = 0; y < grid[1]; ++y)
      for (unsigned x = 0; x < grid[0]; ++x)
        if (!b.run(x, y, z)) {
          *error = message.c_str();
          return -1;
        }
  return 0;
}
}
