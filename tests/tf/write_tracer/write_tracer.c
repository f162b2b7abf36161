/*
 * write_tracer.c - an LD_PRELOAD library that records which process, on which
 * MPI rank, created, wrote, renamed or removed which file. The TensorFlow tests
 * use it to show that under `MATEX_ENABLE=1 mpirun -np N python script.py`
 * only rank 0 writes model files, checkpoints, CSV logs and event files;
 * tests/tf/one_writer_check.py reads what it records.
 *
 * Use:
 *   MATEX_WRITE_TRACE_DIR=/abs/trace/dir        (required for any logging)
 *   MATEX_WRITE_TRACE_UNDER=/abs/prefix         (optional: log only paths that start with it)
 *   mpirun -np 2 -x LD_PRELOAD=/path/to/libmatex_write_tracer.so \
 *          -x MATEX_WRITE_TRACE_DIR -x MATEX_WRITE_TRACE_UNDER python script.py
 *   python tests/tf/one_writer_check.py /abs/trace/dir --under /abs/prefix --expect-writes
 *
 * It interposes open, open64, openat, openat64, creat, creat64 (and the
 * _FORTIFY_SOURCE entries __open_2, __open64_2, __openat_2, __openat64_2),
 * fopen, fopen64, freopen, freopen64, rename, renameat, renameat2, mkdir,
 * mkdirat, unlink, unlinkat, rmdir, truncate and truncate64. Each call goes to
 * the real function (dlsym(RTLD_NEXT)); a call that succeeded and had write
 * intent (open flags with O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND or
 * O_TMPFILE; an fopen mode with w, a or +; every rename, mkdir, unlink, rmdir
 * and truncate) is appended as one line to $MATEX_WRITE_TRACE_DIR/writes.<pid>.log:
 *
 *   rank <TAB> pid <TAB> call <TAB> absolute path [<TAB> second path of a rename] <LF>
 *
 * rank is OMPI_COMM_WORLD_RANK, else PMI_RANK, else PMIX_RANK, else "-".
 * Paths are made absolute (the cwd, or /proc/self/fd/<dirfd> for the *at
 * calls) and normalised lexically ("." and ".." removed, symlinks kept); tab,
 * newline and backslash in a path are written as \t, \n and \\. Failed calls
 * are not logged: they wrote nothing. Writes into the trace directory are never
 * logged.
 *
 * Constraints, as it runs inside Python/TensorFlow processes: no malloc (fixed
 * stack buffers of PATH_MAX), no locks (each line is one write() to a file
 * opened with O_APPEND, opened and closed per line so that a closed or reused
 * descriptor, or a fork, cannot misdirect it), a thread-local guard against
 * re-entry, and errno as the real call left it.
 */
#undef _FORTIFY_SOURCE   /* the fortified inline open() would clash with ours */
#undef _FILE_OFFSET_BITS /* keep open and open64 distinct symbols */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define LINE_BYTES (2 * PATH_MAX + 128)

/* Set while this thread is inside the tracer: calls made meanwhile are only forwarded. */
static __thread int in_tracer __attribute__((tls_model("initial-exec")));

/* ---- The real functions ------------------------------------------------ */

/* The next definition of `name` after this library, looked up once. */
static void *resolve(const char *name, void **slot)
{
    void *fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!fn) {
        fn = dlsym(RTLD_NEXT, name);
        __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
    }
    return fn;
}

/* REAL(open) is the real open, typed as ours; NULL when libc lacks it. */
#define REAL(name) ((__typeof__(&name))resolve(#name, &real_##name))
#define SLOT(name) static void *real_##name

/* ---- Strings without malloc -------------------------------------------- */

/* Appends s to buf (capacity size, length *len), cutting it short when full. */
static void append(char *buf, size_t size, size_t *len, const char *s)
{
    while (*s && *len + 1 < size)
        buf[(*len)++] = *s++;
    buf[*len] = '\0';
}

/* Appends s with tab, newline and backslash escaped, so that a line stays a line. */
static void append_escaped(char *buf, size_t size, size_t *len, const char *s)
{
    for (; *s; s++) {
        const char *piece = *s == '\t' ? "\\t" : *s == '\n' ? "\\n" : *s == '\\' ? "\\\\" : NULL;
        char one[2] = {*s, '\0'};
        size_t need = piece ? 2 : 1;
        if (*len + need + 1 >= size)
            break;
        append(buf, size, len, piece ? piece : one);
    }
}

/* Decimal digits of value into out (at least 21 bytes). */
static void format_ulong(unsigned long value, char *out)
{
    char digits[21];
    int n = 0;
    do {
        digits[n++] = (char)('0' + value % 10);
        value /= 10;
    } while (value);
    for (int i = 0; i < n; i++)
        out[i] = digits[n - 1 - i];
    out[n] = '\0';
}

/* Is path the directory dir or below it ("/a" holds "/a" and "/a/b", not "/ab")? */
static int is_inside(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* ---- Paths ------------------------------------------------------------- */

/* Removes empty, "." and ".." components of an absolute path, in place. */
static void normalise(char *path)
{
    size_t w = 0;
    const char *r = path;
    while (*r) {
        while (*r == '/')
            r++;
        const char *end = r;
        while (*end && *end != '/')
            end++;
        size_t n = (size_t)(end - r);
        if (n == 2 && r[0] == '.' && r[1] == '.') {
            while (w > 0 && path[w - 1] != '/')
                w--;
            if (w > 0)
                w--;
        } else if (n > 0 && !(n == 1 && r[0] == '.')) {
            path[w++] = '/';
            memmove(path + w, r, n);
            w += n;
        }
        r = end;
    }
    if (w == 0)
        path[w++] = '/';
    path[w] = '\0';
}

/* The path that directory descriptor fd names, from /proc/self/fd; 0 on success. */
static int descriptor_path(int fd, char *out, size_t size)
{
    char link[40] = "/proc/self/fd/";
    format_ulong((unsigned long)fd, link + strlen(link));
    ssize_t n = readlink(link, out, size - 1);
    if (n < 0 || out[0] != '/')
        return -1;
    out[n] = '\0';
    return 0;
}

/* path, relative to dirfd (AT_FDCWD: the cwd), as a normalised absolute path. */
static void absolute_path(int dirfd, const char *path, char *out, size_t size)
{
    size_t len = 0;
    out[0] = '\0';
    if (path[0] != '/') {
        int found = dirfd == AT_FDCWD ? getcwd(out, size) != NULL : descriptor_path(dirfd, out, size) == 0;
        if (!found || out[0] != '/') {
            append(out, size, &len, path); /* no directory to resolve against: as given */
            return;
        }
        len = strlen(out);
        append(out, size, &len, "/");
    }
    append(out, size, &len, path);
    normalise(out);
}

/* ---- The log ----------------------------------------------------------- */

/* OMPI_COMM_WORLD_RANK, PMI_RANK or PMIX_RANK; "-" outside mpirun. */
static const char *rank_text(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *value = getenv(names[i]);
        if (value && *value)
            return value;
    }
    return "-";
}

/* Writes all of line to fd, retrying after EINTR and short writes. */
static void write_all(int fd, const char *line, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, line, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        line += n;
        len -= (size_t)n;
    }
}

SLOT(open);
SLOT(mkdir);

/* Appends line to <dir>/writes.<pid>.log (dir has room for the name), with the real open. */
static void append_to_log(char *dir, size_t size, const char *line, size_t len)
{
    int (*real_open_fn)(const char *, int, ...) = REAL(open);
    char pid[24];
    size_t n = strlen(dir);
    if (!real_open_fn)
        return;
    format_ulong((unsigned long)getpid(), pid);
    append(dir, size, &n, "/writes.");
    append(dir, size, &n, pid);
    append(dir, size, &n, ".log");
    int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;
    int fd = real_open_fn(dir, flags, 0644);
    if (fd < 0 && errno == ENOENT && REAL(mkdir)) {
        char *slash = strrchr(dir, '/');
        *slash = '\0';
        REAL(mkdir)(dir, 0777); /* the trace directory itself, one level */
        *slash = '/';
        fd = real_open_fn(dir, flags, 0644);
    }
    if (fd < 0)
        return;
    write_all(fd, line, len);
    close(fd);
}

/* Should this call be logged: not into the trace directory, and under MATEX_WRITE_TRACE_UNDER? */
static int wanted(const char *trace_dir, const char *path, const char *path2)
{
    const char *under = getenv("MATEX_WRITE_TRACE_UNDER");
    if (is_inside(path, trace_dir) && (!path2 || is_inside(path2, trace_dir)))
        return 0;
    if (!under || !*under)
        return 1;
    size_t n = strlen(under);
    return strncmp(path, under, n) == 0 || (path2 && strncmp(path2, under, n) == 0);
}

/* Records a call that wrote path (and path2 for a rename), each relative to its dirfd. */
static void trace(const char *call, int dirfd, const char *path, int dirfd2, const char *path2)
{
    const char *dir_env = getenv("MATEX_WRITE_TRACE_DIR");
    if (!dir_env || !*dir_env || !path || in_tracer)
        return;
    int saved_errno = errno;
    in_tracer = 1;

    char dir[PATH_MAX + 64], first[PATH_MAX], second[PATH_MAX], line[LINE_BYTES];
    absolute_path(AT_FDCWD, dir_env, dir, PATH_MAX);
    absolute_path(dirfd, path, first, sizeof first);
    if (path2)
        absolute_path(dirfd2, path2, second, sizeof second);
    if (wanted(dir, first, path2 ? second : NULL)) {
        char pid[24];
        size_t len = 0;
        format_ulong((unsigned long)getpid(), pid);
        append_escaped(line, sizeof line - 1, &len, rank_text());
        append(line, sizeof line - 1, &len, "\t");
        append(line, sizeof line - 1, &len, pid);
        append(line, sizeof line - 1, &len, "\t");
        append(line, sizeof line - 1, &len, call);
        append(line, sizeof line - 1, &len, "\t");
        append_escaped(line, sizeof line - 1, &len, first);
        if (path2) {
            append(line, sizeof line - 1, &len, "\t");
            append_escaped(line, sizeof line - 1, &len, second);
        }
        line[len++] = '\n'; /* room was kept: the appends saw one byte less */
        append_to_log(dir, sizeof dir, line, len);
    }

    in_tracer = 0;
    errno = saved_errno;
}

/* ---- Write intent ------------------------------------------------------ */

static int open_writes(int flags)
{
    return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC | O_APPEND)) ||
           (flags & O_TMPFILE) == O_TMPFILE;
}

/* Does open need its third argument? */
static int needs_mode(int flags)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

/* An fopen mode with w, a or + (before any ",ccs=" part). */
static int mode_writes(const char *mode)
{
    for (; mode && *mode && *mode != ','; mode++)
        if (*mode == 'w' || *mode == 'a' || *mode == '+')
            return 1;
    return 0;
}

static int missing_int(void)
{
    errno = ENOSYS;
    return -1;
}

/* The mode argument of a variadic open, read only when the flags say it is there. */
#define MODE_ARG(flags, mode)                 \
    do {                                      \
        if (needs_mode(flags)) {              \
            va_list ap;                       \
            va_start(ap, flags);              \
            mode = (mode_t)va_arg(ap, int);   \
            va_end(ap);                       \
        }                                     \
    } while (0)

/* ---- open and friends -------------------------------------------------- */

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    MODE_ARG(flags, mode);
    if (!REAL(open))
        return missing_int();
    int fd = REAL(open)(path, flags, mode);
    if (fd >= 0 && open_writes(flags))
        trace("open", AT_FDCWD, path, AT_FDCWD, NULL);
    return fd;
}

SLOT(open64);
int open64(const char *path, int flags, ...)
{
    mode_t mode = 0;
    MODE_ARG(flags, mode);
    if (!REAL(open64))
        return missing_int();
    int fd = REAL(open64)(path, flags, mode);
    if (fd >= 0 && open_writes(flags))
        trace("open64", AT_FDCWD, path, AT_FDCWD, NULL);
    return fd;
}

SLOT(openat);
int openat(int dirfd, const char *path, int flags, ...)
{
    mode_t mode = 0;
    MODE_ARG(flags, mode);
    if (!REAL(openat))
        return missing_int();
    int fd = REAL(openat)(dirfd, path, flags, mode);
    if (fd >= 0 && open_writes(flags))
        trace("openat", dirfd, path, AT_FDCWD, NULL);
    return fd;
}

SLOT(openat64);
int openat64(int dirfd, const char *path, int flags, ...)
{
    mode_t mode = 0;
    MODE_ARG(flags, mode);
    if (!REAL(openat64))
        return missing_int();
    int fd = REAL(openat64)(dirfd, path, flags, mode);
    if (fd >= 0 && open_writes(flags))
        trace("openat64", dirfd, path, AT_FDCWD, NULL);
    return fd;
}

/* What code built with _FORTIFY_SOURCE calls for a two-argument open. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

SLOT(__open_2);
int __open_2(const char *path, int flags)
{
    if (!REAL(__open_2))
        return missing_int();
    int fd = REAL(__open_2)(path, flags);
    if (fd >= 0 && open_writes(flags))
        trace("open", AT_FDCWD, path, AT_FDCWD, NULL);
    return fd;
}

SLOT(__open64_2);
int __open64_2(const char *path, int flags)
{
    if (!REAL(__open64_2))
        return missing_int();
    int fd = REAL(__open64_2)(path, flags);
    if (fd >= 0 && open_writes(flags))
        trace("open64", AT_FDCWD, path, AT_FDCWD, NULL);
    return fd;
}

SLOT(__openat_2);
int __openat_2(int dirfd, const char *path, int flags)
{
    if (!REAL(__openat_2))
        return missing_int();
    int fd = REAL(__openat_2)(dirfd, path, flags);
    if (fd >= 0 && open_writes(flags))
        trace("openat", dirfd, path, AT_FDCWD, NULL);
    return fd;
}

SLOT(__openat64_2);
int __openat64_2(int dirfd, const char *path, int flags)
{
    if (!REAL(__openat64_2))
        return missing_int();
    int fd = REAL(__openat64_2)(dirfd, path, flags);
    if (fd >= 0 && open_writes(flags))
        trace("openat64", dirfd, path, AT_FDCWD, NULL);
    return fd;
}

SLOT(creat);
int creat(const char *path, mode_t mode)
{
    if (!REAL(creat))
        return missing_int();
    int fd = REAL(creat)(path, mode);
    if (fd >= 0)
        trace("creat", AT_FDCWD, path, AT_FDCWD, NULL);
    return fd;
}

SLOT(creat64);
int creat64(const char *path, mode_t mode)
{
    if (!REAL(creat64))
        return missing_int();
    int fd = REAL(creat64)(path, mode);
    if (fd >= 0)
        trace("creat64", AT_FDCWD, path, AT_FDCWD, NULL);
    return fd;
}

/* ---- stdio ------------------------------------------------------------- */

SLOT(fopen);
FILE *fopen(const char *path, const char *mode)
{
    if (!REAL(fopen)) {
        errno = ENOSYS;
        return NULL;
    }
    FILE *f = REAL(fopen)(path, mode);
    if (f && mode_writes(mode))
        trace("fopen", AT_FDCWD, path, AT_FDCWD, NULL);
    return f;
}

SLOT(fopen64);
FILE *fopen64(const char *path, const char *mode)
{
    if (!REAL(fopen64)) {
        errno = ENOSYS;
        return NULL;
    }
    FILE *f = REAL(fopen64)(path, mode);
    if (f && mode_writes(mode))
        trace("fopen64", AT_FDCWD, path, AT_FDCWD, NULL);
    return f;
}

/* freopen with a NULL path only changes the mode of the stream's file: not logged. */
SLOT(freopen);
FILE *freopen(const char *path, const char *mode, FILE *stream)
{
    if (!REAL(freopen)) {
        errno = ENOSYS;
        return NULL;
    }
    FILE *f = REAL(freopen)(path, mode, stream);
    if (f && mode_writes(mode))
        trace("freopen", AT_FDCWD, path, AT_FDCWD, NULL);
    return f;
}

SLOT(freopen64);
FILE *freopen64(const char *path, const char *mode, FILE *stream)
{
    if (!REAL(freopen64)) {
        errno = ENOSYS;
        return NULL;
    }
    FILE *f = REAL(freopen64)(path, mode, stream);
    if (f && mode_writes(mode))
        trace("freopen64", AT_FDCWD, path, AT_FDCWD, NULL);
    return f;
}

/* ---- Renames ----------------------------------------------------------- */

SLOT(rename);
int rename(const char *from, const char *to)
{
    if (!REAL(rename))
        return missing_int();
    int rc = REAL(rename)(from, to);
    if (rc == 0)
        trace("rename", AT_FDCWD, from, AT_FDCWD, to);
    return rc;
}

SLOT(renameat);
int renameat(int fromfd, const char *from, int tofd, const char *to)
{
    if (!REAL(renameat))
        return missing_int();
    int rc = REAL(renameat)(fromfd, from, tofd, to);
    if (rc == 0)
        trace("renameat", fromfd, from, tofd, to);
    return rc;
}

#ifdef RENAME_NOREPLACE /* glibc 2.28 and later */
SLOT(renameat2);
int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned int flags)
{
    if (!REAL(renameat2))
        return missing_int();
    int rc = REAL(renameat2)(fromfd, from, tofd, to, flags);
    if (rc == 0)
        trace("renameat2", fromfd, from, tofd, to);
    return rc;
}
#endif

/* ---- Directories, removal, truncation ---------------------------------- */

int mkdir(const char *path, mode_t mode)
{
    if (!REAL(mkdir))
        return missing_int();
    int rc = REAL(mkdir)(path, mode);
    if (rc == 0)
        trace("mkdir", AT_FDCWD, path, AT_FDCWD, NULL);
    return rc;
}

SLOT(mkdirat);
int mkdirat(int dirfd, const char *path, mode_t mode)
{
    if (!REAL(mkdirat))
        return missing_int();
    int rc = REAL(mkdirat)(dirfd, path, mode);
    if (rc == 0)
        trace("mkdirat", dirfd, path, AT_FDCWD, NULL);
    return rc;
}

SLOT(unlink);
int unlink(const char *path)
{
    if (!REAL(unlink))
        return missing_int();
    int rc = REAL(unlink)(path);
    if (rc == 0)
        trace("unlink", AT_FDCWD, path, AT_FDCWD, NULL);
    return rc;
}

SLOT(unlinkat);
int unlinkat(int dirfd, const char *path, int flags)
{
    if (!REAL(unlinkat))
        return missing_int();
    int rc = REAL(unlinkat)(dirfd, path, flags);
    if (rc == 0)
        trace("unlinkat", dirfd, path, AT_FDCWD, NULL);
    return rc;
}

SLOT(rmdir);
int rmdir(const char *path)
{
    if (!REAL(rmdir))
        return missing_int();
    int rc = REAL(rmdir)(path);
    if (rc == 0)
        trace("rmdir", AT_FDCWD, path, AT_FDCWD, NULL);
    return rc;
}

SLOT(truncate);
int truncate(const char *path, off_t length)
{
    if (!REAL(truncate))
        return missing_int();
    int rc = REAL(truncate)(path, length);
    if (rc == 0)
        trace("truncate", AT_FDCWD, path, AT_FDCWD, NULL);
    return rc;
}

SLOT(truncate64);
int truncate64(const char *path, off64_t length)
{
    if (!REAL(truncate64))
        return missing_int();
    int rc = REAL(truncate64)(path, length);
    if (rc == 0)
        trace("truncate64", AT_FDCWD, path, AT_FDCWD, NULL);
    return rc;
}
