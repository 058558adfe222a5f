/*
 * forge-sandbox-launcher: the native twin of launcher.py (same steps, same report format).
 *
 * It runs between the worker and bwrap in a fresh single-threaded process: stages bind
 * sources in a private mount namespace, sets rlimits, drops to the sandbox user with no
 * capabilities, sets no_new_privs, joins a fresh session keyring, then execs argv (or forks,
 * execs and reaps every orphan as a subreaper, reporting the child's status and CPU time).
 * Written in C because a second Python interpreter per sandbox start costs more than the
 * sandbox itself; launcher.py stays as the fallback when this binary is not built.
 *
 * argv: REPORT_FD PARENT_PID REAP STAGE_DIR|- NBINDS (SRC NAME)* NLIMITS (NAME SOFT HARD)*
 *       UID GID NENV (K=V)* -- PROGRAM ARGS...
 * It (and in reap mode its child) is killed when PARENT_PID, the worker, dies.
 * The report fd receives JSON lines: {"error": ..., "message": ...} on failure (exit 127),
 * and in reap mode a final {"status": N, "cpu_s": F, "maxrss_kb": K}.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXIT_LAUNCH_FAILED 127
/* Step code's scheduling niceness: launcher.py's SANDBOX_NICE says why (the sealed-runtime
 * tests check both launchers against it). */
#define SANDBOX_NICE 10
#define KEYCTL_JOIN_SESSION_KEYRING 1

static int report_fd = -1;

static void write_all(const char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = write(report_fd, buf, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return;
        }
        buf += n;
        len -= (size_t)n;
    }
}

/* JSON string: escape quote, backslash and control characters, as launcher.py does. */
static void write_json_string(const char *s) {
    char esc[8];
    write_all("\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            write_all(esc, 2);
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            write_all(esc, 6);
        } else {
            write_all((const char *)p, 1);
        }
    }
    write_all("\"", 1);
}

static void fail(const char *stage, const char *what) {
    char message[1024];
    snprintf(message, sizeof message, "%s: %s", what, strerror(errno));
    write_all("{\"error\":", 9);
    write_json_string(stage);
    write_all(",\"message\":", 11);
    write_json_string(message);
    write_all("}\n", 2);
    _exit(EXIT_LAUNCH_FAILED);
}

static void usage(const char *why) {
    errno = EINVAL;
    fail("setup", why);
}

static long long parse_ll(const char *s) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end != '\0' || end == s) usage("malformed number in launcher arguments");
    return v;
}

static int rlimit_resource(const char *name) {
    static const struct { const char *name; int resource; } table[] = {
        {"RLIMIT_CPU", RLIMIT_CPU}, {"RLIMIT_AS", RLIMIT_AS}, {"RLIMIT_FSIZE", RLIMIT_FSIZE},
        {"RLIMIT_NPROC", RLIMIT_NPROC}, {"RLIMIT_NOFILE", RLIMIT_NOFILE},
        {"RLIMIT_CORE", RLIMIT_CORE}, {"RLIMIT_DATA", RLIMIT_DATA},
        {"RLIMIT_STACK", RLIMIT_STACK},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, name) == 0) return table[i].resource;
    usage("unknown rlimit name");
    return -1;
}

static rlim_t rlimit_value(const char *s) {
    long long v = parse_ll(s);
    return v < 0 ? RLIM_INFINITY : (rlim_t)v;
}

/* bwrap resolves bind sources as the unprivileged user; root binds them in a private
 * mount namespace first, so a 0700 parent (a tmp dir, /root/.pyenv) is no obstacle. */
static void stage_binds(const char *dir, int n, char **pairs) {
    char dest[4096];
    if (unshare(CLONE_NEWNS) != 0) fail("setup", "unshare(CLONE_NEWNS)");
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) fail("setup", "make / private");
    if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k") != 0)
        fail("setup", "mount tmpfs on the stage dir");
    for (int i = 0; i < n; i++) {
        const char *source = pairs[2 * i], *name = pairs[2 * i + 1];
        if (snprintf(dest, sizeof dest, "%s/%s", dir, name) >= (int)sizeof dest)
            usage("stage path too long");
        if (mkdir(dest, 0755) != 0) fail("setup", "mkdir in the stage dir");
        if (mount(source, dest, NULL, MS_BIND | MS_REC, NULL) != 0) fail("setup", "bind a source");
    }
}

static void drop_privileges(uid_t uid, gid_t gid) {
    int last_cap = 40;
    FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "r");
    if (f) {
        if (fscanf(f, "%d", &last_cap) != 1) last_cap = 40;
        fclose(f);
    }
    for (int cap = 0; cap <= last_cap; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) fail("setup", "drop a capability");
    if (setgroups(0, NULL) != 0) fail("setup", "setgroups");
    if (setresgid(gid, gid, gid) != 0) fail("setup", "setresgid");
    /* Leaving uid 0 for all three ids clears the permitted, effective and ambient sets. */
    if (setresuid(uid, uid, uid) != 0) fail("setup", "setresuid");
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capset, &header, data) != 0) fail("setup", "clear inheritable capabilities");
}

static void join_fresh_session_keyring(void) {
    if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) >= 0) return;
    /* ENOSYS (no CONFIG_KEYS) or EPERM (a filter on keyctl): the filter is inherited by bwrap
     * and the step, so the step cannot reach the inherited keyring either. */
    if (errno != ENOSYS && errno != EPERM) fail("setup", "keyctl(JOIN_SESSION_KEYRING)");
}

static void exec_program(char **argv, char **envp) {
    signal(SIGPIPE, SIG_DFL);
    signal(SIGXFSZ, SIG_DFL);
    execve(argv[0], argv, envp);
    fail("exec", argv[0]);
}

/* SIGKILL when `parent` dies; set after the privilege drop (which clears it). A parent that
 * died before it was set already made us someone else's child: leave now. */
static void die_with(pid_t parent) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) fail("setup", "prctl(PR_SET_PDEATHSIG)");
    if (getppid() != parent) _exit(127);
}

int main(int argc, char **argv) {
    int i = 1;
    if (argc < 11) {
        fprintf(stderr, "forge-sandbox-launcher: started by Forge's sandbox runner only\n");
        return 2;
    }
    report_fd = (int)parse_ll(argv[i++]);
    if (fcntl(report_fd, F_SETFD, FD_CLOEXEC) != 0) fail("setup", "report fd close-on-exec");
    pid_t parent = (pid_t)parse_ll(argv[i++]);
    int reap = (int)parse_ll(argv[i++]);
    const char *stage_dir = argv[i++];
    long long nbinds = parse_ll(argv[i++]);
    if (nbinds < 0 || nbinds > 4096 || i + 2 * nbinds + 1 > argc)
        usage("bind list runs past the arguments");
    char **binds = &argv[i];
    i += (int)(2 * nbinds);
    long long nlimits = parse_ll(argv[i++]);
    /* the limits, then UID GID NENV: three more arguments must follow */
    if (nlimits < 0 || nlimits > 64 || i + 3 * nlimits + 3 > argc)
        usage("rlimit list runs past the arguments");
    char **limits = &argv[i];
    i += (int)(3 * nlimits);
    long long uid = parse_ll(argv[i++]);
    long long gid = parse_ll(argv[i++]);
    long long nenv = parse_ll(argv[i++]);
    if (nenv < 0 || nenv > 4096 || i + nenv >= argc) usage("environment runs past the arguments");
    char **envp = calloc((size_t)nenv + 1, sizeof(char *));
    if (!envp) fail("setup", "calloc");
    for (int k = 0; k < nenv; k++) envp[k] = argv[i++];
    if (i >= argc || strcmp(argv[i], "--") != 0 || i + 1 >= argc) usage("missing -- PROGRAM");
    char **program = &argv[i + 1];

    if (strcmp(stage_dir, "-") != 0) stage_binds(stage_dir, nbinds, binds);
    /* Set while still root so hard limits can be anything; after the drop they only go down. */
    for (int k = 0; k < nlimits; k++) {
        struct rlimit rl = {rlimit_value(limits[3 * k + 1]), rlimit_value(limits[3 * k + 2])};
        if (setrlimit(rlimit_resource(limits[3 * k]), &rl) != 0) fail("setup", "setrlimit");
    }
    errno = 0;
    int nice_now = getpriority(PRIO_PROCESS, 0);
    if (errno != 0) fail("setup", "getpriority");
    if (setpriority(PRIO_PROCESS, 0, nice_now > SANDBOX_NICE ? nice_now : SANDBOX_NICE) != 0)
        fail("setup", "setpriority");
    if (uid >= 0) drop_privileges((uid_t)uid, (gid_t)gid);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("setup", "prctl(PR_SET_NO_NEW_PRIVS)");
    /* After the drop, so the new keyring belongs to the sandbox user and not to root. */
    join_fresh_session_keyring();
    die_with(parent);
    if (!reap) exec_program(program, envp);

    /* bwrap's outer process exits without waiting for the sandbox's pid 1: as a subreaper we
     * collect it (zombies count against RLIMIT_NPROC), and RUSAGE_CHILDREN holds its CPU time. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) fail("setup", "PR_SET_CHILD_SUBREAPER");
    pid_t launcher = getpid();
    pid_t child = fork();
    if (child < 0) fail("setup", "fork");
    if (child == 0) {
        die_with(launcher); /* bwrap, killed with us, takes the sandbox (--die-with-parent) */
        exec_program(program, envp);
    }
    int child_status = -1, status;
    for (;;) {
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (pid == child) child_status = status;
    }
    struct rusage usage_children;
    getrusage(RUSAGE_CHILDREN, &usage_children);
    double cpu = (double)usage_children.ru_utime.tv_sec + usage_children.ru_utime.tv_usec / 1e6 +
                 (double)usage_children.ru_stime.tv_sec + usage_children.ru_stime.tv_usec / 1e6;
    /* The largest process reaped below the launcher (the step's, in practice), in KiB. */
    long maxrss = usage_children.ru_maxrss;
    char line[160];
    int n = child_status == -1
                ? snprintf(line, sizeof line,
                           "{\"status\":null,\"cpu_s\":%.6f,\"maxrss_kb\":%ld}\n", cpu, maxrss)
                : snprintf(line, sizeof line,
                           "{\"status\":%d,\"cpu_s\":%.6f,\"maxrss_kb\":%ld}\n", child_status,
                           cpu, maxrss);
    write_all(line, (size_t)n);
    _exit(0);
}
