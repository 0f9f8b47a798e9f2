// Heap agent workload: a process that allocates, forks and lets its child allocate too. Only
// the parent's blocks belong to its heap profile: the child (and any process it execs) is not
// profiled. Leaks `parent` blocks of 24 bytes before the fork and as many after it; the child
// leaks `child` blocks of 40 bytes, then execs `true` (LD_PRELOAD and the channel's variable
// inherited) unless told not to. Output: write(2) only.
//   heap_fork [parent child [noexec]]
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

void* volatile sink;

__attribute__((noinline)) static void leak(int n, size_t size) {
    for (int i = 0; i < n; i++) sink = malloc(size);
    sink = NULL;
}

int main(int argc, char** argv) {
    int parent = argc > 1 ? atoi(argv[1]) : 4;
    int child = argc > 2 ? atoi(argv[2]) : 6;
    int exec_true = argc <= 3;
    leak(parent, 24);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        leak(child, 40);
        if (exec_true) {
            char* const args[] = {"/bin/true", NULL};
            execv(args[0], args);
        }
        _exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    leak(parent, 24);
    static const char done[] = "heap_fork done\n";
    if (write(1, done, sizeof done - 1) < 0) return 1;
    return 0;
}
