#include "mpi_types.h"

#include <atomic>
#include <climits>
#include <cstdint>

namespace matexinterpose {

namespace {

enum class Family { kNone, kInteger, kFloating, kComplex, kBool, kByte };

struct TypeEntry {
  MPI_Datatype type;
  matex_dtype_t dtype;  // of the whole element, or of each part for complex
  Family family;
  size_t bytes;
};

template <class T>
constexpr matex_dtype_t signed_dtype() {
  return sizeof(T) == 1 ? MATEX_INT8 : sizeof(T) == 2 ? MATEX_INT16 : sizeof(T) == 4 ? MATEX_INT32 : MATEX_INT64;
}
template <class T>
constexpr matex_dtype_t unsigned_dtype() {
  return sizeof(T) == 1 ? MATEX_UINT8 : sizeof(T) == 2 ? MATEX_UINT16 : sizeof(T) == 4 ? MATEX_UINT32 : MATEX_UINT64;
}

// A Fortran type by its size in this MPI library (0 when it has no Fortran).
void add_fortran(std::vector<TypeEntry>& table, MPI_Datatype type, Family family) {
  int size = 0;
  if (type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS) return;
  const size_t part = family == Family::kComplex ? static_cast<size_t>(size) / 2 : static_cast<size_t>(size);
  matex_dtype_t dtype;
  if (family == Family::kInteger && (part == 1 || part == 2 || part == 4 || part == 8)) {
    dtype = part == 1 ? MATEX_INT8 : part == 2 ? MATEX_INT16 : part == 4 ? MATEX_INT32 : MATEX_INT64;
  } else if (family != Family::kInteger && (part == 4 || part == 8)) {
    dtype = part == 4 ? MATEX_FLOAT32 : MATEX_FLOAT64;
  } else {
    return;
  }
  table.push_back({type, dtype, family, static_cast<size_t>(size)});
}

std::vector<TypeEntry> build_type_table();

// Predefined types that libmatexcomm reduces. MPI_CHAR, MPI_WCHAR, long
// double, the pair types and Fortran's LOGICAL go to PMPI. Built at first
// use (after MPI_Init): Fortran sizes are MPI's to say.
const std::vector<TypeEntry>& type_table() {
  static const std::vector<TypeEntry> table = build_type_table();
  return table;
}

std::vector<TypeEntry> build_type_table() {
  std::vector<TypeEntry> table = {
      {MPI_FLOAT, MATEX_FLOAT32, Family::kFloating, sizeof(float)},
      {MPI_DOUBLE, MATEX_FLOAT64, Family::kFloating, sizeof(double)},
      {MPI_INT, signed_dtype<int>(), Family::kInteger, sizeof(int)},
      {MPI_LONG, signed_dtype<long>(), Family::kInteger, sizeof(long)},
      {MPI_LONG_LONG, signed_dtype<long long>(), Family::kInteger, sizeof(long long)},
      {MPI_SHORT, signed_dtype<short>(), Family::kInteger, sizeof(short)},
      {MPI_SIGNED_CHAR, MATEX_INT8, Family::kInteger, 1},
      {MPI_UNSIGNED_CHAR, MATEX_UINT8, Family::kInteger, 1},
      {MPI_UNSIGNED_SHORT, unsigned_dtype<unsigned short>(), Family::kInteger, sizeof(unsigned short)},
      {MPI_UNSIGNED, unsigned_dtype<unsigned>(), Family::kInteger, sizeof(unsigned)},
      {MPI_UNSIGNED_LONG, unsigned_dtype<unsigned long>(), Family::kInteger, sizeof(unsigned long)},
      {MPI_UNSIGNED_LONG_LONG, unsigned_dtype<unsigned long long>(), Family::kInteger, sizeof(unsigned long long)},
      {MPI_INT8_T, MATEX_INT8, Family::kInteger, 1},
      {MPI_INT16_T, MATEX_INT16, Family::kInteger, 2},
      {MPI_INT32_T, MATEX_INT32, Family::kInteger, 4},
      {MPI_INT64_T, MATEX_INT64, Family::kInteger, 8},
      {MPI_UINT8_T, MATEX_UINT8, Family::kInteger, 1},
      {MPI_UINT16_T, MATEX_UINT16, Family::kInteger, 2},
      {MPI_UINT32_T, MATEX_UINT32, Family::kInteger, 4},
      {MPI_UINT64_T, MATEX_UINT64, Family::kInteger, 8},
      {MPI_AINT, signed_dtype<MPI_Aint>(), Family::kInteger, sizeof(MPI_Aint)},
      {MPI_OFFSET, signed_dtype<MPI_Offset>(), Family::kInteger, sizeof(MPI_Offset)},
      {MPI_COUNT, signed_dtype<MPI_Count>(), Family::kInteger, sizeof(MPI_Count)},
      {MPI_C_BOOL, MATEX_BOOL, Family::kBool, sizeof(bool)},
      {MPI_BYTE, MATEX_UINT8, Family::kByte, 1},
      {MPI_C_FLOAT_COMPLEX, MATEX_FLOAT32, Family::kComplex, 2 * sizeof(float)},
      {MPI_C_DOUBLE_COMPLEX, MATEX_FLOAT64, Family::kComplex, 2 * sizeof(double)},
  };
  for (MPI_Datatype type : {MPI_INTEGER, MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8}) {
    add_fortran(table, type, Family::kInteger);
  }
  for (MPI_Datatype type : {MPI_REAL, MPI_DOUBLE_PRECISION, MPI_REAL4, MPI_REAL8}) {
    add_fortran(table, type, Family::kFloating);
  }
  for (MPI_Datatype type : {MPI_COMPLEX, MPI_DOUBLE_COMPLEX}) add_fortran(table, type, Family::kComplex);
  return table;
}

// The op for a family, or false: what MPI allows and libmatexcomm does alike.
bool map_op(Family family, MPI_Op op, matex_op_t* out) {
  const bool arithmetic = family == Family::kInteger || family == Family::kFloating;
  const bool bitwise = family == Family::kInteger || family == Family::kByte;
  if (arithmetic && op == MPI_SUM) *out = MATEX_SUM;
  else if (arithmetic && op == MPI_PROD) *out = MATEX_PROD;
  else if (arithmetic && op == MPI_MIN) *out = MATEX_MIN;
  else if (arithmetic && op == MPI_MAX) *out = MATEX_MAX;
  else if (bitwise && op == MPI_BAND) *out = MATEX_BAND;
  else if (bitwise && op == MPI_BOR) *out = MATEX_BOR;
  else if (bitwise && op == MPI_BXOR) *out = MATEX_BXOR;
  else if (family == Family::kComplex && op == MPI_SUM) *out = MATEX_SUM;
  // MATEX_BOOL's min is a logical and and its max a logical or; C's bool
  // holds only 0 and 1, so exclusive or is the bitwise one.
  else if (family == Family::kBool && op == MPI_LAND) *out = MATEX_MIN;
  else if (family == Family::kBool && op == MPI_LOR) *out = MATEX_MAX;
  else if (family == Family::kBool && op == MPI_LXOR) *out = MATEX_BXOR;
  else return false;
  return true;
}

}  // namespace

namespace {

// The table's entry for a predefined type, or nullptr. Programs mostly reduce
// one type over and over, so the last one found is tried first.
const TypeEntry* find_type(MPI_Datatype type) {
  static std::atomic<const TypeEntry*> last_found{nullptr};
  const TypeEntry* last = last_found.load(std::memory_order_acquire);  // pairs with the store: the table is built
  if (last != nullptr && last->type == type) return last;
  for (const TypeEntry& entry : type_table()) {
    if (entry.type != type) continue;
    last_found.store(&entry, std::memory_order_release);
    return &entry;
  }
  return nullptr;
}

}  // namespace

Reason map_reduction(MPI_Datatype type, MPI_Op op, Reduction* out) {
  const TypeEntry* entry = find_type(type);
  if (entry == nullptr) return Reason::kDatatype;
  if (!map_op(entry->family, op, &out->op)) return Reason::kOp;
  out->dtype = entry->dtype;
  out->count_factor = entry->family == Family::kComplex ? 2 : 1;
  out->element_bytes = entry->bytes;
  return Reason::kServed;
}

namespace {

// True when the type map lists its bytes in memory order with no gaps: a
// predefined type, or a dup or contiguous run of one (recursively). A dense
// type whose map is permuted (an indexed transpose, a struct of arrays in
// reverse address order) is not, and is packed: its signature order is not
// its memory order.
bool in_memory_order(MPI_Datatype type, int depth = 0) {
  int integers = 0, addresses = 0, types = 0, combiner = 0;
  if (PMPI_Type_get_envelope(type, &integers, &addresses, &types, &combiner) != MPI_SUCCESS) return false;
  if (combiner == MPI_COMBINER_NAMED) return true;
  if ((combiner != MPI_COMBINER_DUP && combiner != MPI_COMBINER_CONTIGUOUS) || types != 1 || depth > 8) return false;
  std::vector<int> ints(static_cast<size_t>(integers) + 1);
  std::vector<MPI_Aint> addrs(static_cast<size_t>(addresses) + 1);
  MPI_Datatype base = MPI_DATATYPE_NULL;
  if (PMPI_Type_get_contents(type, integers, addresses, types, ints.data(), addrs.data(), &base) != MPI_SUCCESS) {
    return false;
  }
  const bool ordered = in_memory_order(base, depth + 1);
  int base_integers = 0, base_addresses = 0, base_types = 0, base_combiner = 0;
  PMPI_Type_get_envelope(base, &base_integers, &base_addresses, &base_types, &base_combiner);
  if (base_combiner != MPI_COMBINER_NAMED) PMPI_Type_free(&base);  // get_contents handed out a copy
  return ordered;
}

}  // namespace

int describe(const void* buffer, MPI_Aint count, MPI_Datatype type, TypedBuffer* out) {
  MPI_Count size = 0;
  MPI_Aint lb = 0;
  MPI_Aint extent = 0;
  MPI_Aint true_lb = 0;
  MPI_Aint true_extent = 0;
  int rc = PMPI_Type_size_x(type, &size);
  if (rc == MPI_SUCCESS) rc = PMPI_Type_get_extent(type, &lb, &extent);
  if (rc == MPI_SUCCESS) rc = PMPI_Type_get_true_extent(type, &true_lb, &true_extent);
  if (rc != MPI_SUCCESS) return rc;
  if (size < 0) return MPI_ERR_TYPE;  // MPI_UNDEFINED: a size MPI cannot count
  out->bytes = static_cast<size_t>(size) * static_cast<size_t>(count);
  out->extent = static_cast<size_t>(extent);
  out->contiguous = true_extent == size && (count <= 1 || extent == size) && in_memory_order(type);
  out->start = byte_address(buffer, true_lb);
  return MPI_SUCCESS;
}

int pack(const void* buffer, MPI_Aint count, MPI_Datatype type, std::vector<char>& scratch, size_t offset,
         size_t bytes, MPI_Comm comm) {
  if (bytes > INT_MAX || offset + bytes > scratch.size() || count > INT_MAX) return MPI_ERR_COUNT;
  int position = 0;
  int rc = PMPI_Pack(buffer, static_cast<int>(count), type, scratch.data() + offset, static_cast<int>(bytes),
                     &position, comm);
  if (rc == MPI_SUCCESS && static_cast<size_t>(position) != bytes) rc = MPI_ERR_INTERN;
  return rc;
}

int unpack(const std::vector<char>& scratch, size_t offset, size_t bytes, void* buffer, MPI_Aint count,
           MPI_Datatype type, MPI_Comm comm) {
  if (bytes > INT_MAX || offset + bytes > scratch.size() || count > INT_MAX) return MPI_ERR_COUNT;
  int position = 0;
  return PMPI_Unpack(scratch.data() + offset, static_cast<int>(bytes), &position, buffer, static_cast<int>(count),
                     type, comm);
}

}  // namespace matexinterpose
