// Tasks as /proc shows them: the threads of a process, and whether a task still runs.
#pragma once

#include <vector>

namespace perfprof::perf {

// The thread ids of process `pid` (/proc/PID/task), ascending; empty when it does not exist.
std::vector<int> tasks_of(int pid);

// The process (thread group) of task `tid`, from /proc/TID/status; -1 when it does not exist.
int tgid_of(int tid);

// Whether task `tid` exists and is no zombie (the state in /proc/TID/stat).
bool task_alive(int tid);

// The state letter of task `tid` in /proc/TID/stat ('R', 'S', 'T' stopped, 'Z', ...); 0 when
// it does not exist.
char task_state(int tid);
// Whether a task in state `st` (task_state()) exists and is no zombie.
inline bool alive_state(char st) {
    return st && st != 'Z' && st != 'X' && st != 'x';
}

}  // namespace perfprof::perf
