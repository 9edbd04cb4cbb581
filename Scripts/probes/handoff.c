// The floor under any lease handed over by the kernel: N processes take turns of a fixed
// critical section, either through flock(2) on one file (what the lease and the bench's floor
// use) or through an ideal first-come-first-served hand-off (a ticket per turn, the holder
// waking exactly the next ticket's owner through a futex), which wakes one process per turn
// and lets nobody barge in. Prints turns per second and each worker's voluntary context
// switches per turn.
//
// usage: handoff flock|ticket PROCESSES TURNS CRITICAL_US PAUSE_US
#define _GNU_SOURCE
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void work(int us) {
    double end = now() + us / 1e6;
    while (now() < end) {}
}

struct tickets {
    _Atomic unsigned next;
    _Atomic unsigned slot[64];
};

static void futex_wait(_Atomic unsigned *word, unsigned value) {
    syscall(SYS_futex, word, FUTEX_WAIT, value, NULL, NULL, 0);
}

static void futex_wake(_Atomic unsigned *word) { syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0); }

int main(int argc, char **argv) {
    if (argc != 6 || (strcmp(argv[1], "flock") && strcmp(argv[1], "ticket"))) {
        fprintf(stderr, "usage: %s flock|ticket PROCESSES TURNS CRITICAL_US PAUSE_US\n", argv[0]);
        return 2;
    }
    int useFlock = !strcmp(argv[1], "flock");
    int processes = atoi(argv[2]), turns = atoi(argv[3]), critical = atoi(argv[4]), pause = atoi(argv[5]);
    if (processes < 1 || turns < 1 || critical < 0 || pause < 0) {
        fprintf(stderr, "%s: PROCESSES and TURNS must be at least 1, CRITICAL_US and PAUSE_US at least 0\n", argv[0]);
        return 2;
    }
    char path[] = "/tmp/baton-handoff-XXXXXX";
    int made = mkstemp(path);
    if (made < 0) { perror("mkstemp"); return 1; }
    close(made);
    struct tickets *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    shared->slot[0] = 1;
    double started = now();
    for (int i = 0; i < processes; i++) {
        if (fork() != 0) continue;
        int fd = open(path, O_RDWR);
        for (int t = 0; t < turns; t++) {
            if (useFlock) {
                flock(fd, LOCK_EX);
                work(critical);
                flock(fd, LOCK_UN);
            } else {
                unsigned ticket = atomic_fetch_add(&shared->next, 1);
                _Atomic unsigned *mine = &shared->slot[ticket % 64];
                while (atomic_load(mine) == 0) futex_wait(mine, 0);
                atomic_store(mine, 0);
                work(critical);
                _Atomic unsigned *next = &shared->slot[(ticket + 1) % 64];
                atomic_store(next, 1);
                futex_wake(next);
            }
            if (pause) usleep(pause);
        }
        struct rusage usage;
        getrusage(RUSAGE_SELF, &usage);
        printf("worker %d: %.2f voluntary switches per turn\n", i, (double)usage.ru_nvcsw / turns);
        fflush(stdout);
        _exit(0);
    }
    for (int i = 0; i < processes; i++) wait(NULL);
    printf("%s: %.0f turns/s\n", argv[1], processes * turns / (now() - started));
    unlink(path);
    return 0;
}
