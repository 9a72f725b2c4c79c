// The canary's C++ part: what TensorFlow's C++ runtime needs from the system, in miniature.
// std::string comes from libstdc++ (GLIBCXX_ symbol versions), and a thread starts through
// pthread_create, which glibc 2.34 moved into libc (GLIBC_2.34), and a number is parsed with
// strtol, which glibc 2.38's headers send to __isoc23_strtol (GLIBC_2.38) under _GNU_SOURCE, as
// g++ and clang++ compile C++. So the library's floor is the glibc and libstdc++ it is compiled and
// linked against (the build image's, or a sysroot's), exactly as TensorFlow's is; tfbuild finds it
// with auditwheel.
#include <pthread.h>

#include <cstdlib>
#include <string>

namespace {
struct Job {
    std::string text;
    int n;
};

void *fill(void *arg) {
    auto *job = static_cast<Job *>(arg);
    job->text.assign(static_cast<std::size_t>(job->n), 'x');
    return nullptr;
}
}  // namespace

extern "C" long canary_parse(const char *text) { return std::strtol(text, nullptr, 0); }

extern "C" int canary_runtime(int n) {
    Job job{std::string(), n};
    pthread_t thread;
    if (pthread_create(&thread, nullptr, fill, &job) != 0) return -1;
    pthread_join(thread, nullptr);
    return static_cast<int>(job.text.size());
}
