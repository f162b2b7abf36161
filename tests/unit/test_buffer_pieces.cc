// test_buffer_pieces.cc - PieceWalker: element ranges of a fused allreduce cut
// at tensor boundaries, empty tensors skipped, offsets relative to the range.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "algorithms/buffer_pieces.h"

namespace matexcomm {
namespace {

struct Part {
  size_t piece;   // which tensor
  size_t inside;  // first element inside it
  size_t at;      // offset from the range's first element
  size_t n;
  bool operator==(const Part& o) const { return piece == o.piece && inside == o.inside && at == o.at && n == o.n; }
};

// Tensors of `counts` int32 elements; send and recv are distinct arrays.
class Pieces {
 public:
  explicit Pieces(const std::vector<size_t>& counts) : counts_(counts) {
    for (size_t c : counts) {
      send_.emplace_back(c + 1);
      recv_.emplace_back(c + 1);
    }
    for (size_t i = 0; i < counts.size(); ++i) pieces_.push_back({send_[i].data(), recv_[i].data(), counts[i]});
  }
  std::vector<Part> walk(size_t first, size_t count) const {
    PieceWalker walker(pieces_.data(), pieces_.size(), sizeof(int32_t));
    std::vector<Part> parts;
    walker.for_each(first, count, [&](const char* send, char* recv, size_t at, size_t n) {
      for (size_t i = 0; i < pieces_.size(); ++i) {
        const char* base = reinterpret_cast<const char*>(send_[i].data());
        if (send >= base && send <= base + counts_[i] * sizeof(int32_t) && n > 0 && n <= counts_[i]) {
          const size_t inside = static_cast<size_t>(send - base) / sizeof(int32_t);
          EXPECT_EQ(recv, reinterpret_cast<const char*>(recv_[i].data()) + inside * sizeof(int32_t));
          parts.push_back({i, inside, at, n});
          return;
        }
      }
      ADD_FAILURE() << "part outside every piece";
    });
    return parts;
  }

 private:
  std::vector<size_t> counts_;
  std::vector<std::vector<int32_t>> send_, recv_;
  std::vector<BufferPiece> pieces_;
};

TEST(PieceWalker, CutsRangesAtPieceBoundaries) {
  const Pieces p({3, 0, 5, 1, 0, 4});  // elements: [0,3) [3,8) [8,9) [9,13)
  EXPECT_EQ(p.walk(0, 13), (std::vector<Part>{{0, 0, 0, 3}, {2, 0, 3, 5}, {3, 0, 8, 1}, {5, 0, 9, 4}}));
  EXPECT_EQ(p.walk(2, 2), (std::vector<Part>{{0, 2, 0, 1}, {2, 0, 1, 1}}));
  EXPECT_EQ(p.walk(3, 5), (std::vector<Part>{{2, 0, 0, 5}}));  // exactly one piece, past an empty one
  EXPECT_EQ(p.walk(8, 1), (std::vector<Part>{{3, 0, 0, 1}}));
  EXPECT_EQ(p.walk(12, 1), (std::vector<Part>{{5, 3, 0, 1}}));
  EXPECT_TRUE(p.walk(5, 0).empty());
}

TEST(PieceWalker, EveryRangeCoversItsElementsOnce) {
  const std::vector<size_t> counts = {7, 1, 0, 13, 2, 0, 0, 29, 3};
  const Pieces p(counts);
  size_t total = 0;
  for (size_t c : counts) total += c;
  for (size_t first = 0; first < total; ++first) {
    for (size_t count = 0; first + count <= total; ++count) {
      size_t covered = 0;
      for (const Part& part : p.walk(first, count)) {
        ASSERT_EQ(part.at, covered) << "first " << first << " count " << count;
        covered += part.n;
      }
      ASSERT_EQ(covered, count) << "first " << first << " count " << count;
    }
  }
}

TEST(PieceWalker, ASingleBufferIsOnePart) {
  std::vector<int32_t> send(10), recv(10);
  PieceWalker walker(send.data(), recv.data(), send.size(), sizeof(int32_t));
  int calls = 0;
  walker.for_each(4, 5, [&](const char* s, char* r, size_t at, size_t n) {
    ++calls;
    EXPECT_EQ(s, reinterpret_cast<const char*>(send.data() + 4));
    EXPECT_EQ(r, reinterpret_cast<char*>(recv.data() + 4));
    EXPECT_EQ(at, 0u);
    EXPECT_EQ(n, 5u);
  });
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace matexcomm
