#include "src/core/type_signature.h"

#include <array>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "include/mpizip.h"

namespace mpizip::core {
namespace {

int g_keyval = MPI_KEYVAL_INVALID;

// The cached form, an attribute value: bit 0 set, basic in bits 1-4, contiguous in bit 5, the
// element hint in bits 8-15, the element count from bit 16.
void* encode(const TypeSignature& t) {
  const uintptr_t v = 1 | (static_cast<uintptr_t>(t.basic) << 1) |
                      (static_cast<uintptr_t>(t.contiguous) << 5) |
                      (static_cast<uintptr_t>(t.element) << 8) |
                      (static_cast<uintptr_t>(t.elems) << 16);
  return reinterpret_cast<void*>(v);
}

TypeSignature decode(void* value) {
  const auto v = reinterpret_cast<uintptr_t>(value);
  TypeSignature t;
  t.basic = static_cast<Basic>((v >> 1) & 0xf);
  t.contiguous = ((v >> 5) & 1) != 0;
  t.element = static_cast<uint8_t>(v >> 8);
  t.elems = static_cast<uint64_t>(v >> 16);
  return t;
}

size_t basic_bytes(Basic b) {
  switch (b) {
    case Basic::kDouble: return 8;
    case Basic::kFloat: return 4;
    case Basic::kU16: return 2;
    case Basic::kU8: return 1;
    default: return 0;
  }
}

}  // namespace

Basic fortran_real(MPI_Datatype t) {
  static const MPI_Datatype kReals[4] = {MPI_REAL, MPI_REAL4, MPI_DOUBLE_PRECISION, MPI_REAL8};
  // Their sizes, asked once (MPIZip asks only once MPI is initialised).
  static const auto kBasics = [] {
    std::array<Basic, 4> b{};
    for (int i = 0; i < 4; ++i) {
      int size = 0;
      b[i] = Basic::kOther;
      if (kReals[i] == MPI_DATATYPE_NULL || PMPI_Type_size(kReals[i], &size) != MPI_SUCCESS) {
        continue;
      }
      b[i] = size == 4 ? Basic::kFloat : size == 8 ? Basic::kDouble : Basic::kOther;
    }
    return b;
  }();
  for (int i = 0; i < 4; ++i)
    if (t == kReals[i] && t != MPI_DATATYPE_NULL) return kBasics[i];
  return Basic::kOther;
}

namespace {

// The signature of a datatype MPI calls named, or of one of MPIZip's own (kOther: neither).
TypeSignature named(MPI_Datatype t) {
  if (t == MPI_FLOAT) return TypeSignature{Basic::kFloat, 0, true, 0};
  if (t == MPI_DOUBLE) return TypeSignature{Basic::kDouble, 0, true, 0};
  if (const Basic real = fortran_real(t); real != Basic::kOther) {
    return TypeSignature{real, 0, true, 0};
  }
  if (t == MPIZip_bf16) return TypeSignature{Basic::kU16, 0, true, MPIZIP_ELEM_BF16};
  if (t == MPIZip_fp16) return TypeSignature{Basic::kU16, 0, true, MPIZIP_ELEM_FP16};
  if (t == MPIZip_fp8_e4m3) return TypeSignature{Basic::kU8, 0, true, MPIZIP_ELEM_FP8_E4M3};
  if (t == MPIZip_fp8_e5m2) return TypeSignature{Basic::kU8, 0, true, MPIZIP_ELEM_FP8_E5M2};
  if (t == MPI_UINT16_T) return TypeSignature{Basic::kU16, 0, true, 0};
  if (t == MPI_UINT8_T) return TypeSignature{Basic::kU8, 0, true, 0};
  return TypeSignature{Basic::kOther, 0, false, 0};
}

// Open MPI's MPI_Type_get_contents hands out duplicates of derived constituents whose own contents
// are the basic type, so MPIZip's datatypes are known there only by the name the duplicate keeps
// ("Dup MPIZIP_BF16"). The hint only guides compression, never a decision: see TypeSignature.
uint8_t element_by_name(MPI_Datatype t) {
  char name[MPI_MAX_OBJECT_NAME] = {0};
  int len = 0;
  if (PMPI_Type_get_name(t, name, &len) != MPI_SUCCESS) return 0;
  const std::string n(name, static_cast<size_t>(len));
  auto ends = [&](const char* s) {
    const std::string x(s);
    return n.size() >= x.size() && n.compare(n.size() - x.size(), x.size(), x) == 0;
  };
  if (ends("MPIZIP_BF16")) return MPIZIP_ELEM_BF16;
  if (ends("MPIZIP_FP16")) return MPIZIP_ELEM_FP16;
  if (ends("MPIZIP_FP8_E4M3")) return MPIZIP_ELEM_FP8_E4M3;
  if (ends("MPIZIP_FP8_E5M2")) return MPIZIP_ELEM_FP8_E5M2;
  return 0;
}

Basic merge(Basic a, Basic b) {
  if (a == Basic::kEmpty) return b;
  if (b == Basic::kEmpty || a == b) return a;
  return Basic::kOther;
}

int64_t size_of(MPI_Datatype t) {
  MPI_Count n = 0;
  return PMPI_Type_size_x(t, &n) == MPI_SUCCESS ? static_cast<int64_t>(n) : -1;
}

bool dense(MPI_Datatype t, const TypeSignature& sig) {
  MPI_Count lb = 0, extent = 0;
  if (PMPI_Type_get_extent_x(t, &lb, &extent) != MPI_SUCCESS) return false;
  return sig.contiguous && lb == 0 && extent == size_of(t);
}

TypeSignature analyse(MPI_Datatype t);

// Decodes a derived datatype from its constructor's arguments.
TypeSignature analyse_derived(MPI_Datatype t, int combiner, int ni, int na, int nd) {
  std::vector<int> ints(static_cast<size_t>(ni));
  std::vector<MPI_Aint> addrs(static_cast<size_t>(na));
  std::vector<MPI_Datatype> types(static_cast<size_t>(nd));
  TypeSignature out;
  if (PMPI_Type_get_contents(t, ni, na, nd, ints.data(), addrs.data(), types.data()) !=
      MPI_SUCCESS) {
    return out;
  }
  std::vector<TypeSignature> parts;
  parts.reserve(types.size());
  for (MPI_Datatype c : types) parts.push_back(analyse(c));
  switch (combiner) {
    case MPI_COMBINER_DUP:
      out = parts[0];
      if (out.element == 0) out.element = element_by_name(t);
      break;
    case MPI_COMBINER_CONTIGUOUS:
      out.basic = parts[0].basic;
      out.element = parts[0].element;
      out.contiguous = dense(types[0], parts[0]);
      break;
    case MPI_COMBINER_RESIZED:
      out.basic = parts[0].basic;
      out.element = parts[0].element;
      out.contiguous = parts[0].contiguous;  // with lb 0 and extent == size: finish()
      break;
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_HVECTOR:
    case MPI_COMBINER_INDEXED:
    case MPI_COMBINER_HINDEXED:
    case MPI_COMBINER_INDEXED_BLOCK:
    case MPI_COMBINER_HINDEXED_BLOCK:
    case MPI_COMBINER_SUBARRAY:
    case MPI_COMBINER_DARRAY:
      out.basic = parts[0].basic;  // laid out elsewhere than back to back: packed
      out.element = parts[0].element;
      break;
    case MPI_COMBINER_STRUCT: {
      // Blocks of length 0 add nothing to the signature, whatever their datatype.
      Basic b = Basic::kEmpty;
      int element = -1;
      for (size_t i = 0; i < types.size(); ++i) {
        if (ints[1 + i] <= 0) continue;
        b = merge(b, parts[i].basic);
        element = element < 0 || element == parts[i].element ? parts[i].element : 0;
      }
      out.basic = b;
      out.element = static_cast<uint8_t>(element < 0 ? 0 : element);
      break;
    }
    default:  // Fortran parameterised types and anything newer: not a protocol signature
      out.basic = Basic::kOther;
      break;
  }
  for (MPI_Datatype c : types) {
    int cni = 0, cna = 0, cnd = 0, cc = 0;
    if (PMPI_Type_get_envelope(c, &cni, &cna, &cnd, &cc) == MPI_SUCCESS &&
        cc != MPI_COMBINER_NAMED) {
      PMPI_Type_free(&c);  // get_contents hands out new references to derived datatypes
    }
  }
  return out;
}

TypeSignature finish(MPI_Datatype t, TypeSignature sig) {
  const int64_t size = size_of(t);
  if (size <= 0) {
    sig.basic = size == 0 ? Basic::kEmpty : Basic::kOther;
    sig.elems = 0;
    sig.contiguous = false;
    return sig;
  }
  const size_t eb = basic_bytes(sig.basic);
  if (eb == 0 || size % static_cast<int64_t>(eb) != 0) {
    // Any other signature: its bytes, back to back when the datatype has no gaps.
    sig.basic = Basic::kOther;
    sig.elems = static_cast<uint64_t>(size);
    sig.element = 0;
    if (sig.contiguous) sig.contiguous = dense(t, sig);
    return sig;
  }
  sig.elems = static_cast<uint64_t>(size) / eb;
  if (sig.contiguous) sig.contiguous = dense(t, sig);
  return sig;
}

// Predefined datatypes of other basic types seen so far, with their signatures. Their handles live
// as long as MPI, so a handle found here needs no MPI call: a small message of MPI_CHAR or MPI_INT
// on a protocol communicator pays a few compares, not an MPI_Type_get_envelope.
constexpr int kNamedSlots = 64;
struct NamedSlot {
  std::atomic<MPI_Datatype> handle{};  // zero: empty (never a valid handle); published last
  std::atomic<uintptr_t> signature{0};  // encode()d
};
NamedSlot g_named_other[kNamedSlots];

bool known_named_other(MPI_Datatype t, TypeSignature* out) {
  for (auto& slot : g_named_other) {
    const MPI_Datatype h = slot.handle.load(std::memory_order_acquire);
    if (h == t) {
      *out = decode(reinterpret_cast<void*>(slot.signature.load(std::memory_order_relaxed)));
      return true;
    }
    if (h == MPI_Datatype{}) return false;
  }
  return false;
}

void remember_named_other(MPI_Datatype t, const TypeSignature& sig) {
  static std::mutex m;
  std::lock_guard<std::mutex> lock(m);
  TypeSignature known;
  if (known_named_other(t, &known)) return;
  for (auto& slot : g_named_other) {
    if (slot.handle.load(std::memory_order_relaxed) != MPI_Datatype{}) continue;
    slot.signature.store(reinterpret_cast<uintptr_t>(encode(sig)), std::memory_order_relaxed);
    slot.handle.store(t, std::memory_order_release);
    return;
  }
}

TypeSignature analyse(MPI_Datatype t) {
  const TypeSignature n = named(t);
  if (n.basic != Basic::kOther) return finish(t, n);
  int ni = 0, na = 0, nd = 0, combiner = MPI_COMBINER_NAMED;
  if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) != MPI_SUCCESS) return TypeSignature{};
  if (combiner == MPI_COMBINER_NAMED) {
    // Bytes back to back where the type has no gaps (MPI_DOUBLE_INT, say, has one).
    const TypeSignature sig = finish(t, TypeSignature{Basic::kOther, 0, true, 0});
    if (sig.elems < (uint64_t{1} << 48)) remember_named_other(t, sig);
    return sig;
  }
  void* cached = nullptr;
  int found = 0;
  if (g_keyval != MPI_KEYVAL_INVALID && PMPI_Type_get_attr(t, g_keyval, &cached, &found) ==
      MPI_SUCCESS && found) {
    return decode(cached);
  }
  TypeSignature sig = finish(t, analyse_derived(t, combiner, ni, na, nd));
  if (g_keyval != MPI_KEYVAL_INVALID && sig.elems < (uint64_t{1} << 48)) {
    PMPI_Type_set_attr(t, g_keyval, encode(sig));
  }
  return sig;
}

}  // namespace

int type_signature_setup() {
  if (g_keyval != MPI_KEYVAL_INVALID) return MPI_SUCCESS;
  return PMPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &g_keyval, nullptr);
}

TypeSignature type_signature(MPI_Datatype type) {
  if (type == MPI_DATATYPE_NULL) return TypeSignature{};
  if (type == MPI_FLOAT) return TypeSignature{Basic::kFloat, 1, true, 0};
  if (type == MPI_DOUBLE) return TypeSignature{Basic::kDouble, 1, true, 0};
  if (const Basic real = fortran_real(type); real != Basic::kOther) {
    return TypeSignature{real, 1, true, 0};
  }
  // The last predefined datatype of another basic type this thread looked up (a code sending
  // MPI_CHAR or MPI_INT sends it again and again): one compare instead of the table's scan.
  // Predefined handles only: a derived one may be freed and its handle reused.
  struct Last {
    MPI_Datatype type{};
    uintptr_t signature = 0;
  };
  static thread_local __attribute__((tls_model("initial-exec"))) Last last;
  if (last.type == type && last.signature != 0) return decode(reinterpret_cast<void*>(last.signature));
  TypeSignature known;
  if (known_named_other(type, &known)) {
    last = Last{type, reinterpret_cast<uintptr_t>(encode(known))};
    return known;
  }
  return analyse(type);
}

}  // namespace mpizip::core
