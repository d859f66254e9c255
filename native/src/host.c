/*
 * Host detection (host.h): cpuid and xgetbv on x86, sysfs for caches (cpuid's cache leaves
 * when sysfs is missing), sched_getaffinity for CPUs; and the block sizes derived from them.
 */
#define _GNU_SOURCE
#include "host.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define HOST_X86 1
#endif

static host_info detected;
static host_tuning_sizes tuning;
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;

#ifdef HOST_X86
static void cpuid(unsigned leaf, unsigned subleaf, unsigned registers[4]) {
  __cpuid_count(leaf, subleaf, registers[0], registers[1], registers[2], registers[3]);
}

/* Register state the OS saves on context switch (XCR0); 0 without OSXSAVE. */
static unsigned long long saved_state(bool osxsave) {
  if (!osxsave) return 0;
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return ((unsigned long long)edx << 32) | eax;
}

static void read_vendor_and_model(host_info *host, unsigned top_leaf) {
  unsigned r[4];
  cpuid(0, 0, r);
  char vendor[13];
  memcpy(vendor, &r[1], 4);
  memcpy(vendor + 4, &r[3], 4);
  memcpy(vendor + 8, &r[2], 4);
  vendor[12] = '\0';
  const char *name = strcmp(vendor, "GenuineIntel") == 0   ? "intel"
                     : strcmp(vendor, "AuthenticAMD") == 0 ? "amd"
                                                           : vendor;
  snprintf(host->vendor, sizeof host->vendor, "%s", name);
  cpuid(0x80000000u, 0, r);
  if (r[0] < 0x80000004u) return;
  char brand[49];
  for (unsigned i = 0; i < 3; i++) {
    cpuid(0x80000002u + i, 0, r);
    memcpy(brand + 16 * i, r, 16);
  }
  brand[48] = '\0';
  const char *start = brand;
  while (*start == ' ') start++;
  snprintf(host->model, sizeof host->model, "%s", start);
  (void)top_leaf;
}

static void read_features(host_info *host) {
  unsigned r[4];
  cpuid(0, 0, r);
  unsigned top = r[0];
  read_vendor_and_model(host, top);
  if (top < 1) return;
  cpuid(1, 0, r);
  bool osxsave = r[2] & (1u << 27);
  unsigned long long state = saved_state(osxsave);
  bool ymm = (state & 0x6) == 0x6;          /* SSE and AVX state */
  bool zmm = ymm && (state & 0xE0) == 0xE0; /* opmask, upper ZMM0-15, ZMM16-31 */
  bool tiles = (state & 0x60000) == 0x60000;
  host->avx = ymm && (r[2] & (1u << 28));
  host->fma = host->avx && (r[2] & (1u << 12));
  host->f16c = host->avx && (r[2] & (1u << 29));
  if (top < 7) return;
  cpuid(7, 0, r);
  unsigned max_subleaf = r[0];
  host->avx2 = host->avx && (r[1] & (1u << 5));
  host->avx512f = zmm && (r[1] & (1u << 16));
  host->avx512dq = host->avx512f && (r[1] & (1u << 17));
  host->avx512bw = host->avx512f && (r[1] & (1u << 30));
  host->avx512vl = host->avx512f && (r[1] & (1u << 31));
  host->avx512_vnni = host->avx512f && (r[2] & (1u << 11));
  host->avx512_fp16 = host->avx512f && (r[3] & (1u << 23));
  host->amx_bf16 = tiles && (r[3] & (1u << 22));
  host->amx_tile = tiles && (r[3] & (1u << 24));
  if (max_subleaf >= 1) {
    cpuid(7, 1, r);
    host->avx512_bf16 = host->avx512f && (r[0] & (1u << 5));
  }
}

/* cpuid's deterministic cache leaves (4 on Intel, 0x8000001D on AMD), when sysfs is absent. */
static void read_caches_from_cpuid(host_info *host) {
  unsigned r[4];
  cpuid(0x80000000u, 0, r);
  unsigned leaf = strcmp(host->vendor, "amd") == 0 && r[0] >= 0x8000001Du ? 0x8000001Du : 4;
  for (unsigned index = 0; index < 16; index++) {
    cpuid(leaf, index, r);
    unsigned type = r[0] & 0x1F, level = (r[0] >> 5) & 0x7;
    if (type == 0) break;
    if (type == 2) continue; /* instruction cache */
    int64_t bytes = (int64_t)(((r[1] >> 22) & 0x3FF) + 1) * (((r[1] >> 12) & 0x3FF) + 1) *
                    ((r[1] & 0xFFF) + 1) * ((int64_t)r[2] + 1);
    if (level == 1) host->l1d_bytes = bytes;
    if (level == 2) host->l2_bytes = bytes;
    if (level == 3) host->l3_bytes = bytes;
  }
}
#endif

/* One sysfs value of cpu0's cache `index`, or "" when absent. */
static void read_cache_file(int index, const char *name, char *buffer, size_t size) {
  char path[96];
  snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/%s", index, name);
  buffer[0] = '\0';
  FILE *file = fopen(path, "r");
  if (!file) return;
  if (!fgets(buffer, (int)size, file)) buffer[0] = '\0';
  fclose(file);
}

/* "48K" → 49152, "260M" → 272629760. */
static int64_t parse_size(const char *text) {
  char *end;
  long long value = strtoll(text, &end, 10);
  if (*end == 'K') value *= 1024;
  else if (*end == 'M') value *= 1024 * 1024;
  else if (*end == 'G') value *= 1024LL * 1024 * 1024;
  return value > 0 ? value : 0;
}

static bool read_caches_from_sysfs(host_info *host) {
  bool found = false;
  for (int index = 0; index < 8; index++) {
    char level[16], type[32], size[32];
    read_cache_file(index, "level", level, sizeof level);
    if (!level[0]) break;
    read_cache_file(index, "type", type, sizeof type);
    read_cache_file(index, "size", size, sizeof size);
    if (strncmp(type, "Instruction", 11) == 0) continue;
    int64_t bytes = parse_size(size);
    int number = atoi(level);
    if (number == 1) host->l1d_bytes = bytes;
    if (number == 2) host->l2_bytes = bytes;
    if (number == 3) host->l3_bytes = bytes;
    found = true;
  }
  return found;
}

static int available_cpus(void) {
  cpu_set_t set;
  int count = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0) count = CPU_COUNT(&set);
  if (count <= 0) count = (int)sysconf(_SC_NPROCESSORS_ONLN);
  return count > 0 ? count : 1;
}

static int64_t clamp(int64_t value, int64_t low, int64_t high) {
  return value < low ? low : value > high ? high : value;
}

/*
 * Half of L2 holds the block a kernel re-reads (the other half: the operand streaming past it,
 * C, the prefetched next block). gemm_panels' A block is panel_rows × the whole depth;
 * gemm_packed's is a chunk of packed B, packed_columns × 256 (1,024 columns with 2 MiB), and a
 * task takes at most packed_rows rows (the same count as the B chunk's floats over 256: about
 * 1,000 rows with 2 MiB, so loading the chunk from L3 is well under 1% of a task's work); the
 * bfloat16 product's row tile rows × depth but beside a widened B block as large, hence a
 * quarter. Unknown caches count as 1 MiB of L2.
 */
static void derive_tuning(const host_info *host) {
  int64_t l2 = host->l2_bytes > 0 ? host->l2_bytes : 1 << 20;
  tuning.a_block_bytes = l2 / 2;
  tuning.packed_rows = clamp(l2 / 2 / (256 * (int64_t)sizeof(float)) / 48 * 48, 96, 1536);
  tuning.packed_columns = clamp(l2 / 2 / (256 * (int64_t)sizeof(float)) / 32 * 32, 64, 2048);
  tuning.row_tile_bytes = clamp(l2 / 4, 64 * 1024, 1 << 20);
}

static void detect(void) {
#ifdef HOST_X86
  read_features(&detected);
#elif defined(__aarch64__)
  snprintf(detected.vendor, sizeof detected.vendor, "arm64");
#else
  snprintf(detected.vendor, sizeof detected.vendor, "other");
#endif
  bool caches = read_caches_from_sysfs(&detected);
#ifdef HOST_X86
  if (!caches) read_caches_from_cpuid(&detected);
#else
  (void)caches;
#endif
  detected.cpus = available_cpus();
  derive_tuning(&detected);
}

const host_info *host_detect(void) {
  pthread_once(&detect_once, detect);
  return &detected;
}

const host_tuning_sizes *host_tuning(void) {
  pthread_once(&detect_once, detect);
  return &tuning;
}

const char *host_widest_isa(const host_info *host) {
  if (host->avx512f && host->avx512bw && host->avx512dq && host->avx512vl && host->fma)
    return "avx512";
  if (host->avx2 && host->fma && host->f16c) return "avx2";
  return "portable";
}

void host_kind(const host_info *host, char *buffer, int size) {
  const char *isa = host_widest_isa(host);
  const char *bf16 = strcmp(isa, "avx512") == 0 && host->avx512_bf16 ? "-bf16" : "";
#ifdef HOST_X86
  snprintf(buffer, (size_t)size, "%s-%s%s", host->vendor, isa, bf16);
#else
  (void)isa;
  (void)bf16;
  snprintf(buffer, (size_t)size, "%s", host->vendor);
#endif
}
