/* tfbuild overlay loader: the one file of the overlay in site-packages/tensorflow-plugins/.
 *
 * TensorFlow dlopens every shared object in that directory at `import tensorflow`. This loader is
 * compiled for baseline x86-64 (no instruction beyond SSE2), so it runs on any x86-64 CPU. Before
 * the kernels (compiled for one target) are loaded, it checks:
 *   1. the CPU has every instruction set the kernels were compiled for (CPUID, and XGETBV for the
 *      register state the operating system saves: AVX, AVX-512, AMX);
 *   2. the TensorFlow in this process is the build the kernels were compiled against: its release
 *      (TF_Version) and the size of its libtensorflow_framework.so.2;
 *   3. the kernels' special-value check has passed on a CPU with their instruction sets: at build
 *      time, or (an overlay built on a CPU without them: TFB_PENDING names what it lacked) where
 *      it is installed, by `tfbuild overlay --check`, which writes "passed TFB_TOKEN" into the
 *      file CHECK beside the kernels;
 *   4. TFBUILD_OVERLAY does not turn it off: off, 0, false or no, in any case (how smoke times
 *      stock TensorFlow in the same environment); a value that is neither off nor on (on, 1, true,
 *      yes, or empty) is said on one line, and taken as on. TFBUILD_OVERLAY=status is on, and
 *      says on one line whether it loaded, how many kernels, for which target (or why not).
 *      TFBUILD_OVERLAY=check is what that check runs with: on, and a pending check not awaited.
 * Any check failing: nothing is registered, and one line on stderr says why. Otherwise the kernels
 * are loaded with RTLD_NOW, so an unresolved symbol also fails before any of their code runs.
 *
 * Built by tfbuild with these macros (tfbuild/overlay/compile.py):
 *   TFB_FEATURES  the instruction sets the kernels need, by /proc/cpuinfo name, comma-separated
 *   TFB_TARGET    the target's name, TFB_TENSORFLOW the release, TFB_FRAMEWORK_SIZE its size
 *   TFB_KERNELS   the kernels' file name, in the directory tfbuild_overlay/ beside this file
 *   TFB_KERNEL_COUNT  how many kernels it registers above TensorFlow's own
 *   TFB_PENDING   the instruction sets the build machine lacked, comma-separated ("": checked)
 *   TFB_TOKEN     the kernels' sha256: CHECK's "passed" line names the kernels it passed for
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

enum reg { EAX, EBX, ECX, EDX };

/* One instruction set: where CPUID reports it, and the XCR0 state bits it needs. */
struct feature {
  const char *name;     /* as /proc/cpuinfo and archspec name it */
  unsigned leaf, subleaf;
  enum reg reg;
  unsigned bit;
  unsigned long long xcr0; /* state the OS must enable (XGETBV), 0: none */
};

#define YMM 0x6ULL               /* SSE and AVX state */
#define ZMM (0x6ULL | 0xe0ULL)   /* plus opmask, ZMM_Hi256, Hi16_ZMM */
#define TILE (0x6ULL | 0x60000ULL) /* plus XTILECFG, XTILEDATA */
#define EXT 0x80000001u

static const struct feature FEATURES[] = {
    {"sse3", 1, 0, ECX, 0, 0},          {"pclmulqdq", 1, 0, ECX, 1, 0},
    {"ssse3", 1, 0, ECX, 9, 0},         {"fma", 1, 0, ECX, 12, YMM},
    {"cx16", 1, 0, ECX, 13, 0},         {"sse4_1", 1, 0, ECX, 19, 0},
    {"sse4_2", 1, 0, ECX, 20, 0},       {"movbe", 1, 0, ECX, 22, 0},
    {"popcnt", 1, 0, ECX, 23, 0},       {"aes", 1, 0, ECX, 25, 0},
    {"xsave", 1, 0, ECX, 26, 0},        {"avx", 1, 0, ECX, 28, YMM},
    {"f16c", 1, 0, ECX, 29, YMM},       {"rdrand", 1, 0, ECX, 30, 0},
    {"mmx", 1, 0, EDX, 23, 0},          {"sse", 1, 0, EDX, 25, 0},
    {"sse2", 1, 0, EDX, 26, 0},         {"fsgsbase", 7, 0, EBX, 0, 0},
    {"tsc_adjust", 7, 0, EBX, 1, 0},    {"bmi1", 7, 0, EBX, 3, 0},
    {"avx2", 7, 0, EBX, 5, YMM},        {"bmi2", 7, 0, EBX, 8, 0},
    {"avx512f", 7, 0, EBX, 16, ZMM},    {"avx512dq", 7, 0, EBX, 17, ZMM},
    {"rdseed", 7, 0, EBX, 18, 0},       {"adx", 7, 0, EBX, 19, 0},
    {"avx512ifma", 7, 0, EBX, 21, ZMM}, {"clflushopt", 7, 0, EBX, 23, 0},
    {"clwb", 7, 0, EBX, 24, 0},         {"avx512pf", 7, 0, EBX, 26, ZMM},
    {"avx512er", 7, 0, EBX, 27, ZMM},   {"avx512cd", 7, 0, EBX, 28, ZMM},
    {"sha_ni", 7, 0, EBX, 29, 0},       {"avx512bw", 7, 0, EBX, 30, ZMM},
    {"avx512vl", 7, 0, EBX, 31, ZMM},   {"avx512vbmi", 7, 0, ECX, 1, ZMM},
    {"pku", 7, 0, ECX, 3, 0},           {"waitpkg", 7, 0, ECX, 5, 0},
    {"avx512_vbmi2", 7, 0, ECX, 6, ZMM}, {"gfni", 7, 0, ECX, 8, 0},
    {"vaes", 7, 0, ECX, 9, YMM},        {"vpclmulqdq", 7, 0, ECX, 10, YMM},
    {"avx512_vnni", 7, 0, ECX, 11, ZMM}, {"avx512_bitalg", 7, 0, ECX, 12, ZMM},
    {"avx512_vpopcntdq", 7, 0, ECX, 14, ZMM}, {"rdpid", 7, 0, ECX, 22, 0},
    {"cldemote", 7, 0, ECX, 25, 0},     {"movdiri", 7, 0, ECX, 27, 0},
    {"movdir64b", 7, 0, ECX, 28, 0},    {"avx512_vp2intersect", 7, 0, EDX, 8, ZMM},
    {"serialize", 7, 0, EDX, 14, 0},    {"amx_bf16", 7, 0, EDX, 22, TILE},
    {"avx512_fp16", 7, 0, EDX, 23, ZMM}, {"amx_tile", 7, 0, EDX, 24, TILE},
    {"amx_int8", 7, 0, EDX, 25, TILE},  {"flush_l1d", 7, 0, EDX, 28, 0},
    {"sha512", 7, 1, EAX, 0, YMM},      {"sm3", 7, 1, EAX, 1, YMM},
    {"sm4", 7, 1, EAX, 2, YMM},         {"avx_vnni", 7, 1, EAX, 4, YMM},
    {"avx512_bf16", 7, 1, EAX, 5, ZMM}, {"cmpccxadd", 7, 1, EAX, 7, 0},
    {"amx_fp16", 7, 1, EAX, 21, TILE},
    {"avx_ifma", 7, 1, EAX, 23, YMM},   {"avx_vnni_int8", 7, 1, EDX, 4, YMM},
    {"avx_ne_convert", 7, 1, EDX, 5, YMM}, {"avx_vnni_int16", 7, 1, EDX, 10, YMM},
    {"xsaveopt", 0xd, 1, EAX, 0, 0},    {"xsavec", 0xd, 1, EAX, 1, 0},
    {"lahf_lm", EXT, 0, ECX, 0, 0},     {"abm", EXT, 0, ECX, 5, 0},
    {"sse4a", EXT, 0, ECX, 6, 0},       {"xop", EXT, 0, ECX, 11, YMM},
    {"fma4", EXT, 0, ECX, 16, YMM},     {"tbm", EXT, 0, ECX, 21, 0},
    {"3dnowext", EXT, 0, EDX, 30, 0},   {"3dnow", EXT, 0, EDX, 31, 0},
    {"clzero", 0x80000008u, 0, EBX, 0, 0},
};

static unsigned long long xcr0(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0; /* no OSXSAVE */
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((unsigned long long)hi << 32) | lo;
}

/* 1: the CPU and the OS run it; 0: they do not; -1: this loader does not know the name. */
static int has(const char *name, size_t len, unsigned long long state) {
  for (size_t i = 0; i < sizeof FEATURES / sizeof FEATURES[0]; i++) {
    const struct feature *f = &FEATURES[i];
    if (strlen(f->name) != len || strncmp(f->name, name, len) != 0) continue;
    unsigned r[4] = {0, 0, 0, 0};
    if (!__get_cpuid_count(f->leaf, f->subleaf, &r[EAX], &r[EBX], &r[ECX], &r[EDX])) return 0;
    if (!(r[f->reg] & (1u << f->bit))) return 0;
    return (state & f->xcr0) == f->xcr0;
  }
  return -1;
}

/* The instruction sets of TFB_FEATURES this machine lacks, space-separated, into missing. */
static void lacking(char *missing, size_t size) {
  const unsigned long long state = xcr0();
  const char *p = TFB_FEATURES;
  missing[0] = '\0';
  while (*p) {
    size_t len = strcspn(p, ",");
    if (has(p, len, state) != 1 && strlen(missing) + len + 2 < size) {
      if (missing[0]) strcat(missing, " ");
      strncat(missing, p, len);
    }
    p += len + (p[len] == ',');
  }
}

struct found {
  const char *suffix;
  char path[4096];
};

static int find_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct found *f = data;
  size_t n = strlen(info->dlpi_name), m = strlen(f->suffix);
  if (n >= m && strcmp(info->dlpi_name + n - m, f->suffix) == 0 &&
      (n == m || info->dlpi_name[n - m - 1] == '/') && n < sizeof f->path) {
    strcpy(f->path, info->dlpi_name);
    return 1;
  }
  return 0;
}

/* How to get an overlay for the TensorFlow this process runs. */
#define MATCHING \
  "; an overlay for it: tfbuild overlay --installed --python PYTHON (the Python you run)"

/* NULL: this process runs the TensorFlow the kernels were built against; else why not. */
static const char *other_tensorflow(char *why, size_t size) {
  void *cc = dlopen("libtensorflow_cc.so.2", RTLD_NOW | RTLD_NOLOAD);
  const char *(*version)(void) = cc ? (const char *(*)(void))dlsym(cc, "TF_Version") : NULL;
  if (version == NULL) return "no TensorFlow C API (TF_Version) in this process";
  if (strcmp(version(), TFB_TENSORFLOW) != 0) {
    snprintf(why, size, "this TensorFlow is %s%s", version(), MATCHING);
    return why;
  }
  struct found framework = {"libtensorflow_framework.so.2", ""};
  struct stat st;
  if (!dl_iterate_phdr(find_object, &framework) || stat(framework.path, &st) != 0)
    return "no libtensorflow_framework.so.2 in this process";
  if ((long long)st.st_size != (long long)TFB_FRAMEWORK_SIZE) {
    snprintf(why, size,
             "this TensorFlow %s is another build (libtensorflow_framework.so.2 is %lld bytes, "
             "not %lld)%s",
             TFB_TENSORFLOW, (long long)st.st_size, (long long)TFB_FRAMEWORK_SIZE, MATCHING);
    return why;
  }
  return NULL;
}

static void say(const char *why) {
  fprintf(stderr,
          "tfbuild overlay (%s, TensorFlow %s): not loaded, stock kernels run: %s\n",
          TFB_TARGET, TFB_TENSORFLOW, why);
}

static void marker(void) {}

/* TFBUILD_OVERLAY: 1 off, 0 on (unset too), -1 neither. */
static int switched_off(const char *value) {
  static const char *const offs[] = {"off", "0", "false", "no"};
  static const char *const ons[] = {"", "on", "1", "true", "yes", "status", "check"};
  if (value == NULL) return 0;
  for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++)
    if (strcasecmp(value, offs[i]) == 0) return 1;
  for (size_t i = 0; i < sizeof ons / sizeof ons[0]; i++)
    if (strcasecmp(value, ons[i]) == 0) return 0;
  return -1;
}

/* The file beside the kernels that records their check on this machine, and its one good line. */
#define CHECK_FILE "CHECK"
#define PASSED "passed " TFB_TOKEN

/* TFB_PENDING with spaces between its names, into out (sizeof TFB_PENDING bytes). */
static void pending_sets(char *out) {
  for (size_t i = 0; i < sizeof TFB_PENDING; i++)
    out[i] = TFB_PENDING[i] == ',' ? ' ' : TFB_PENDING[i];
}

/* NULL: the kernels' check has passed (at build time, or here); else why they wait. */
static const char *unchecked(const char *dir, char *why, size_t size) {
  if (TFB_PENDING[0] == '\0') return NULL;
  char path[4096], line[128] = "";
  snprintf(path, sizeof path, "%s/tfbuild_overlay/" CHECK_FILE, dir);
  FILE *record = fopen(path, "r");
  if (record != NULL) {
    if (fgets(line, sizeof line, record) == NULL) line[0] = '\0';
    fclose(record);
  }
  line[strcspn(line, "\n")] = '\0';
  if (strcmp(line, PASSED) == 0) return NULL;
  char lacked[sizeof TFB_PENDING];
  pending_sets(lacked);
  snprintf(why, size,
           "its special-value check has not run on a CPU with its instruction sets (it was "
           "built on one without %s); run: tfbuild overlay --check --python PYTHON (the Python "
           "you run)",
           lacked);
  return why;
}

__attribute__((constructor)) static void tfbuild_overlay_load(void) {
  const char *value = getenv("TFBUILD_OVERLAY");
  int off = switched_off(value);
  if (off > 0) return; /* asked for: said by whoever asked */
  if (off < 0)
    fprintf(stderr,
            "tfbuild overlay (%s, TensorFlow %s): TFBUILD_OVERLAY=%.64s is neither on nor off, "
            "taken as on (off, 0, false or no turn it off)\n",
            TFB_TARGET, TFB_TENSORFLOW, value);
  char missing[512], why[1024];
  lacking(missing, sizeof missing);
  if (missing[0]) {
    char lacked[sizeof TFB_PENDING];
    pending_sets(lacked);
    if (lacked[0] != '\0')
      snprintf(why, sizeof why,
               "this CPU lacks %s; its special-value check is pending too (built on a CPU "
               "without %s): it runs where the CPU has them, tfbuild overlay --check",
               missing, lacked);
    else
      snprintf(why, sizeof why, "this CPU lacks %s", missing);
    say(why);
    return;
  }
  const char *other = other_tensorflow(why, sizeof why);
  if (other != NULL) {
    say(other);
    return;
  }
  Dl_info self;
  char path[4096];
  if (!dladdr((void *)marker, &self) || self.dli_fname == NULL) {
    say("cannot find its own file");
    return;
  }
  const char *slash = strrchr(self.dli_fname, '/');
  char dir[4096];
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - self.dli_fname) : 1,
           slash ? self.dli_fname : ".");
  const char *waiting = unchecked(dir, why, sizeof why);
  if (waiting != NULL && !(value != NULL && strcasecmp(value, "check") == 0)) {
    say(waiting);
    return;
  }
  snprintf(path, sizeof path, "%s/tfbuild_overlay/%s", dir, TFB_KERNELS);
  if (dlopen(path, RTLD_NOW | RTLD_LOCAL) == NULL) {
    snprintf(why, sizeof why, "%s", dlerror());
    say(why);
  } else if (value != NULL && strcasecmp(value, "status") == 0) {
    fprintf(stderr,
            "tfbuild overlay (%s, TensorFlow %s): loaded, %d kernels above TensorFlow's own "
            "(TFBUILD_OVERLAY=off turns it off)\n",
            TFB_TARGET, TFB_TENSORFLOW, TFB_KERNEL_COUNT);
  }
}
