// Tasks as /proc shows them: the threads of a process, and whether a task still runs.
#pragma once

#include <vector>

namespace perfprof::perf {

// The thread ids of process `pid` (/proc/PID/task), ascending; empty when it does not exist.
std::vector<int> tasks_of(int pid);

// Whether task `tid` exists and is no zombie (the state in /proc/TID/stat).
bool task_alive(int tid);

}  // namespace perfprof::perf
