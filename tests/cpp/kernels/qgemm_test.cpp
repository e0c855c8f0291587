// The CPU's int8 matrix products (backend/cpu/ops/quant_gemm.h): the
// dot-product kernel, the kernel on packed weights and the one on packed
// activation rows (vector and, where the CPU has them, AMX tiles), against exact int64 sums, over
// shapes that leave partial tiles, partial panels and depths that are not a multiple of 4 or 64,
// int8 and uint8 activations with zero points, and extreme values; and the
// packed kernel's requantizing stores. Operands are allocated to their
// exact size, so that a read past a row's end is caught under AddressSanitizer.

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "pterun/backend/cpu/ops/quant_gemm.h"
#include "pterun/backend/cpu/ops/quant_util.h"

namespace pterun::cpu {
namespace {

struct Case {
  int64_t m, n, k;
  bool a_unsigned;
  int32_t zero_point;
  bool extreme;  // every value at the end of its range
};

std::vector<int32_t> reference(const Case& c, const std::vector<uint8_t>& a,
                               const std::vector<int8_t>& w) {
  std::vector<int32_t> out(static_cast<size_t>(c.m * c.n));
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      int64_t s = 0;
      for (int64_t kk = 0; kk < c.k; ++kk) {
        const uint8_t raw = a[static_cast<size_t>(i * c.k + kk)];
        const int64_t x = c.a_unsigned ? int64_t{raw} : int64_t{static_cast<int8_t>(raw)};
        s += (x - c.zero_point) * w[static_cast<size_t>(j * c.k + kk)];
      }
      out[static_cast<size_t>(i * c.n + j)] = static_cast<int32_t>(s);
    }
  }
  return out;
}

void run(const Case& c) {
  const std::string where = "m " + std::to_string(c.m) + " n " + std::to_string(c.n) + " k " +
                            std::to_string(c.k) + (c.a_unsigned ? " uint8" : " int8") + " zp " +
                            std::to_string(c.zero_point) + (c.extreme ? " extreme" : "");
  SCOPED_TRACE(where);
  std::mt19937 rng(static_cast<uint32_t>(c.m * 131 + c.n * 17 + c.k));
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> a(static_cast<size_t>(c.m * c.k));
  std::vector<int8_t> w(static_cast<size_t>(c.n * c.k));
  for (auto& v : a) {
    v = static_cast<uint8_t>(c.extreme ? (c.a_unsigned ? 255 : 0x80) : byte(rng));
  }
  for (auto& v : w) v = static_cast<int8_t>(c.extreme ? -128 : byte(rng) - 128);
  std::vector<int32_t> sums(static_cast<size_t>(c.n), 0);
  for (int64_t j = 0; j < c.n; ++j) {
    for (int64_t kk = 0; kk < c.k; ++kk) sums[static_cast<size_t>(j)] += w[j * c.k + kk];
  }
  const std::vector<int32_t> want = reference(c, a, w);
  const QGemm p{a.data(), c.k,         c.a_unsigned, c.zero_point, w.data(),
                c.k,      sums.data(), c.m,          c.n,          c.k};

  std::vector<int32_t> got(want.size(), -1);
  qgemm(p, got.data(), c.n);
  EXPECT_EQ(got, want) << "qgemm";

  const int64_t panel_bytes = qgemm_panel_bytes(c.k);
  std::vector<uint8_t> panels(static_cast<size_t>((c.n + 15) / 16 * panel_bytes));
  qgemm_pack(w.data(), c.k, c.n, c.k, !c.a_unsigned, 0, (c.n + 15) / 16, panels.data());
  // The same rows with a pitch of whole steps of 64 bytes, the bytes past k
  // random (QGemm::a_padded), and with their sums given (QGemm::a_sums).
  const int64_t pitch = (c.k + 63) / 64 * 64;
  std::vector<uint8_t> padded(static_cast<size_t>(c.m * pitch));
  std::vector<int32_t> row_sums(static_cast<size_t>(c.m), 0);
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t kk = 0; kk < pitch; ++kk) {
      const uint8_t v = kk < c.k ? a[static_cast<size_t>(i * c.k + kk)] : byte(rng);
      padded[static_cast<size_t>(i * pitch + kk)] = v;
      if (kk < c.k) row_sums[static_cast<size_t>(i)] += static_cast<int8_t>(v);
    }
  }
  QGemm on_pitch = p;
  on_pitch.a = padded.data();
  on_pitch.lda = pitch;
  on_pitch.a_padded = true;
  QGemm summed = p;
  summed.a_sums = row_sums.data();
  // The vector kernels, then AMX tiles where the machine has them.
  for (bool amx : {false, true}) {
    const char* how = amx && qgemm_amx() ? " on AMX" : "";
    const auto product = amx ? &qgemm_packed_amx : &qgemm_packed;
    got.assign(want.size(), -1);
    product(p, panels.data(), got.data(), c.n);
    EXPECT_EQ(got, want) << "qgemm_packed" << how;
    got.assign(want.size(), -1);
    product(on_pitch, panels.data(), got.data(), c.n);
    EXPECT_EQ(got, want) << "qgemm_packed, padded rows" << how;
    got.assign(want.size(), -1);
    product(summed, panels.data(), got.data(), c.n);
    EXPECT_EQ(got, want) << "qgemm_packed, row sums given" << how;
  }

  // Requantized in the stores (qgemm_packed_requant), against the exact
  // sums requantized as requantize_run does: one rounding per multiply and
  // add (volatile keeps the compiler from fusing them here), int8 and uint8.
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> mult(static_cast<size_t>(c.n)), bias(static_cast<size_t>(c.n));
  for (int64_t j = 0; j < c.n; ++j) {
    mult[static_cast<size_t>(j)] = 1e-4f + 1e-3f * unit(rng);
    bias[static_cast<size_t>(j)] = 4.0f * unit(rng) - 2.0f;
  }
  for (bool out_unsigned : {false, true}) {
    const int32_t lo = out_unsigned ? 0 : -128, hi = out_unsigned ? 255 : 127;
    const float inv = 1.0f / 0.05f, zp = out_unsigned ? 128.0f : 3.0f;
    std::vector<uint8_t> q(want.size(), 0xAA);
    std::vector<uint8_t*> out_rows(static_cast<size_t>(c.m));
    for (int64_t i = 0; i < c.m; ++i) out_rows[static_cast<size_t>(i)] = q.data() + i * c.n;
    qgemm_packed_requant(
        p, panels.data(),
        {out_rows.data(), {mult.data(), bias.data(), inv, zp, lo, hi}, out_unsigned});
    std::vector<uint8_t> expect(want.size());
    for (size_t e = 0; e < want.size(); ++e) {
      const size_t j = e % static_cast<size_t>(c.n);
      const volatile float product = static_cast<float>(want[e]) * mult[j];
      const int32_t v = requantize(product + bias[j], inv, zp, lo, hi);
      expect[e] = static_cast<uint8_t>(v);
    }
    EXPECT_EQ(q, expect) << "qgemm_packed_requant" << (out_unsigned ? " uint8" : " int8");
  }

  std::vector<uint8_t> rows(static_cast<size_t>((c.m + 15) / 16 * panel_bytes));
  qgemm_pack(reinterpret_cast<const int8_t*>(a.data()), c.k, c.m, c.k, !c.a_unsigned, 0,
             (c.m + 15) / 16, rows.data());
  for (bool amx : {false, true}) {
    const bool before = qgemm_use_amx(amx);
    const char* how = amx && qgemm_amx() ? " on AMX" : "";
    got.assign(want.size(), -1);
    (amx ? &qgemm_rows_on_panels_amx : &qgemm_rows_on_panels)(p, rows.data(), got.data(), c.n);
    EXPECT_EQ(got, want) << "qgemm_rows_on_panels" << how;
    qgemm_use_amx(before);
  }
}

TEST(Qgemm, PackedKernelsMatchExactSums) {
  for (int64_t m : {1, 3, 8, 9, 16, 17, 33, 64}) {
    for (int64_t n : {1, 5, 16, 17, 32, 40, 80}) {
      for (int64_t k : {1, 3, 4, 7, 64, 65, 130}) {
        run({m, n, k, false, 0, false});
        run({m, n, k, false, -7, false});
        run({m, n, k, true, 131, false});
      }
    }
  }
}

TEST(Qgemm, ExtremeValuesOverLongRows) {
  // |sum| up to 255 * 128 * k: int32 holds it to k = 65536.
  for (int64_t k : {4093, 65536}) {
    run({9, 18, k, true, 0, true});
    run({9, 18, k, false, 0, true});
    run({9, 18, k, false, 127, true});
  }
}

TEST(Qgemm, GatheredWindowsMatchExactSums) {
  // Rows read through a_rows / a_groups (a convolution's windows in place):
  // row i's group q is the 4 bytes at rows[i] + groups[q]. Here a 3x3
  // window of 8-channel pixels over a 9x10 image, rows at scattered pixels.
  if (!qgemm_packs()) GTEST_SKIP() << "no packed kernel in this build";
  const int64_t width = 10, height = 9, channels = 8, taps = 9;
  const int64_t k = taps * channels;
  std::vector<int32_t> groups;
  for (int64_t ky = 0; ky < 3; ++ky) {
    for (int64_t kx = 0; kx < 3; ++kx) {
      for (int64_t c = 0; c < channels; c += 4) {
        groups.push_back(static_cast<int32_t>((ky * width + kx) * channels + c));
      }
    }
  }
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<uint8_t> image(static_cast<size_t>(height * width * channels));
  for (auto& v : image) v = static_cast<uint8_t>(byte(rng));
  for (bool a_unsigned : {false, true}) {
    for (int64_t m : {1, 7, 8, 13, 32}) {
      for (int64_t n : {5, 16, 40}) {
        SCOPED_TRACE("m " + std::to_string(m) + " n " + std::to_string(n) +
                     (a_unsigned ? " uint8" : " int8"));
        // Window corners anywhere the 3x3 window fits; the dense rows they make.
        std::vector<const uint8_t*> rows(static_cast<size_t>(m));
        std::vector<uint8_t> dense(static_cast<size_t>(m * k));
        std::vector<int32_t> sums(static_cast<size_t>(m), 0);
        for (int64_t i = 0; i < m; ++i) {
          const int64_t y = (i * 5) % (height - 2), x = (i * 3) % (width - 2);
          rows[static_cast<size_t>(i)] = image.data() + (y * width + x) * channels;
          for (int64_t q = 0; q < k / 4; ++q) {
            for (int b = 0; b < 4; ++b) {
              const uint8_t v = rows[static_cast<size_t>(i)][groups[static_cast<size_t>(q)] + b];
              dense[static_cast<size_t>(i * k + 4 * q + b)] = v;
              sums[static_cast<size_t>(i)] += static_cast<int8_t>(v);
            }
          }
        }
        std::vector<int8_t> w(static_cast<size_t>(n * k));
        for (auto& v : w) v = static_cast<int8_t>(byte(rng) - 128);
        std::vector<int32_t> w_sums(static_cast<size_t>(n), 0);
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t kk = 0; kk < k; ++kk) w_sums[static_cast<size_t>(j)] += w[j * k + kk];
        }
        const int32_t zp = a_unsigned ? 120 : -3;
        const Case c{m, n, k, a_unsigned, zp, false};
        const std::vector<int32_t> want = reference(c, dense, w);
        const int64_t panel_bytes = qgemm_panel_bytes(k);
        std::vector<uint8_t> panels(static_cast<size_t>((n + 15) / 16 * panel_bytes));
        qgemm_pack(w.data(), k, n, k, !a_unsigned, 0, (n + 15) / 16, panels.data());
        QGemm p{nullptr, 0, a_unsigned, zp, w.data(), k, w_sums.data(), m, n, k};
        p.a_rows = rows.data();
        p.a_groups = groups.data();
        p.a_sums = sums.data();
        std::vector<int32_t> got(want.size(), -1);
        qgemm_packed(p, panels.data(), got.data(), n);
        EXPECT_EQ(got, want) << "qgemm_packed, gathered rows";

        std::vector<float> mult(static_cast<size_t>(n)), bias(static_cast<size_t>(n));
        for (int64_t j = 0; j < n; ++j) {
          mult[static_cast<size_t>(j)] = 1e-4f + 1e-3f * unit(rng);
          bias[static_cast<size_t>(j)] = 4.0f * unit(rng) - 2.0f;
        }
        std::vector<uint8_t> q(want.size(), 0xAA);
        std::vector<uint8_t*> out_rows(static_cast<size_t>(m));
        for (int64_t i = 0; i < m; ++i) out_rows[static_cast<size_t>(i)] = q.data() + i * n;
        const float inv = 1.0f / 0.05f, out_zp = 3.0f;
        qgemm_packed_requant(
            p, panels.data(),
            {out_rows.data(), {mult.data(), bias.data(), inv, out_zp, -128, 127}, false});
        std::vector<uint8_t> expect(want.size());
        for (size_t e = 0; e < want.size(); ++e) {
          const size_t j = e % static_cast<size_t>(n);
          const volatile float product = static_cast<float>(want[e]) * mult[j];
          expect[e] = static_cast<uint8_t>(requantize(product + bias[j], inv, out_zp, -128, 127));
        }
        EXPECT_EQ(q, expect) << "qgemm_packed_requant, gathered rows";
      }
    }
  }
}

}  // namespace
}  // namespace pterun::cpu
