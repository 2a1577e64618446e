/* Byte-stream files and the clock of the porting contract (src/os/os_file.c):
 * create/truncate, write_all of a large buffer, read to EOF, unlink, bad
 * arguments, each call failed by its own fault kind, and a monotonic clock. */
#include "harness.h"
#include "os/os.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_clock(void) {
    uint64_t a = tmem__os_now_ns();
    usleep(2000);
    uint64_t b = tmem__os_now_ns();
    CHECK(a > 0);
    CHECK(b >= a + 1000000); /* at least 1 ms later */
    /* a pure query: never counted, never failed */
    tmem__os_fault_reset_count();
    tmem__os_fault_arm(TMEM__OS_ANY, 0, true, ENOMEM);
    CHECK(tmem__os_now_ns() >= b);
    CHECK(!tmem__os_fault_fired());
    tmem__os_fault_disarm();
    CHECK(tmem__os_fault_calls() == 0);
}

static void test_round_trip(void) {
    char dir[256], path[300];
    REQUIRE(tmem_test_tmpdir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/f.bin", dir);
    int64_t fds0 = tmem__os_live_fds();
    size_t n = (3u << 20) + 123; /* several pipe/page-sized writes inside */
    unsigned char *buf = malloc(n), *back = malloc(n + 1);
    REQUIRE(buf && back);
    for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(i * 131u + 7u);
    int fd = -2;
    CHECK_OK(tmem__os_file_create(path, &fd));
    CHECK(fd >= 0 && tmem__os_live_fds() == fds0 + 1);
    CHECK_OK(tmem__os_write_all(fd, buf, n));
    CHECK_OK(tmem__os_write_all(fd, buf, 0));
    CHECK_OK(tmem__os_close(fd));
    uint64_t size = 0;
    CHECK_OK(tmem__os_file_open(path, &fd, &size));
    CHECK(size == n);
    size_t len = 0, got = 1;
    while (len <= n) {
        CHECK_OK(tmem__os_read(fd, back + len, n + 1 - len, &got));
        if (got == 0) break;
        len += got;
    }
    CHECK(len == n && memcmp(buf, back, n) == 0);
    CHECK_OK(tmem__os_close(fd));
    /* create truncates */
    CHECK_OK(tmem__os_file_create(path, &fd));
    CHECK_OK(tmem__os_write_all(fd, "ab", 2));
    CHECK_OK(tmem__os_close(fd));
    CHECK_OK(tmem__os_file_open(path, &fd, &size));
    CHECK(size == 2);
    CHECK_OK(tmem__os_close(fd));
    CHECK_OK(tmem__os_unlink(path));
    CHECK_ST(tmem__os_unlink(path), TMEM_E_NOT_FOUND);
    CHECK(tmem__os_live_fds() == fds0);
    free(buf);
    free(back);
    rmdir(dir);
}

static void test_bad_args_and_errors(void) {
    int fd = 7;
    size_t got = 9;
    CHECK_ST(tmem__os_file_create(NULL, &fd), TMEM_E_INVALID_ARG);
    CHECK(fd == -1);
    CHECK_ST(tmem__os_file_create("", &fd), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_file_create("/x", NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_file_create("/nonexistent-dir/x", &fd), TMEM_E_NOT_FOUND);
    CHECK(fd == -1);
    CHECK_ST(tmem__os_write_all(-1, "a", 1), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_write_all(1, NULL, 1), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_read(-1, &fd, 1, &got), TMEM_E_INVALID_ARG);
    CHECK(got == 0);
    CHECK_ST(tmem__os_read(0, &fd, 1, NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_unlink(NULL), TMEM_E_INVALID_ARG);
    CHECK_ST(tmem__os_unlink(""), TMEM_E_INVALID_ARG);
}

/* Each new call fails by its own kind, touching nothing; UNLINK is a teardown
 * call, so a TMEM__OS_ANY arm never fails it. */
static void test_faults(void) {
    char dir[256], path[300];
    REQUIRE(tmem_test_tmpdir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/f", dir);
    int fd = 5;
    tmem__os_fault_arm(TMEM__OS_FILE_CREATE, 0, false, EACCES);
    CHECK_ST(tmem__os_file_create(path, &fd), TMEM_E_PERMISSION);
    tmem__os_fault_disarm();
    CHECK(fd == -1 && access(path, F_OK) != 0);
    REQUIRE_OK(tmem__os_file_create(path, &fd));
    tmem__os_fault_arm(TMEM__OS_WRITE, 0, false, EIO);
    CHECK_ST(tmem__os_write_all(fd, "abc", 3), TMEM_E_IO);
    tmem__os_fault_disarm();
    CHECK_OK(tmem__os_write_all(fd, "abc", 3));
    CHECK_OK(tmem__os_close(fd));
    uint64_t size;
    REQUIRE_OK(tmem__os_file_open(path, &fd, &size));
    CHECK(size == 3); /* the failed write wrote nothing */
    char c[4];
    size_t got = 9;
    tmem__os_fault_arm(TMEM__OS_READ, 0, false, EIO);
    CHECK_ST(tmem__os_read(fd, c, sizeof c, &got), TMEM_E_IO);
    tmem__os_fault_disarm();
    CHECK(got == 0);
    CHECK_OK(tmem__os_read(fd, c, sizeof c, &got));
    CHECK(got == 3 && !memcmp(c, "abc", 3));
    CHECK_OK(tmem__os_close(fd));
    tmem__os_fault_arm(TMEM__OS_ANY, 0, true, ENOMEM);
    CHECK_OK(tmem__os_unlink(path)); /* teardown: not failed under ANY */
    tmem__os_fault_disarm();
    REQUIRE_OK(tmem__os_file_create(path, &fd));
    CHECK_OK(tmem__os_close(fd));
    tmem__os_fault_arm(TMEM__OS_UNLINK, 0, false, EACCES);
    CHECK_ST(tmem__os_unlink(path), TMEM_E_PERMISSION);
    tmem__os_fault_disarm();
    CHECK(access(path, F_OK) == 0);
    CHECK_OK(tmem__os_unlink(path));
    rmdir(dir);
}

int main(void) {
    RUN(test_clock);
    RUN(test_round_trip);
    RUN(test_bad_args_and_errors);
    RUN(test_faults);
    return tmem_test_finish();
}
