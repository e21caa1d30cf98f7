/* Replays files (or every file of directories) through a fuzz target's
 * LLVMFuzzerTestOneInput: the seed corpora run in every normal build, and a
 * crash file found by libFuzzer can be reproduced without clang:
 *     replay_onnx tests/fuzz/corpus/onnx crash-1234 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open '%s'\n", path);
        return 1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) break;
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        uint8_t *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (!buf || err) {
        free(buf);
        fprintf(stderr, "replay: cannot read '%s'\n", path);
        return 1;
    }
    /* exact-size copy so that overreads are caught by ASan */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return 1;
    }
    if (n) memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
    int files = 0, fails = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "replay: no such file or directory '%s'\n", argv[i]);
            fails++;
            continue;
        }
        if (!S_ISDIR(sb.st_mode)) {
            fails += run_file(argv[i]);
            files++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            fprintf(stderr, "replay: cannot open directory '%s'\n", argv[i]);
            fails++;
            continue;
        }
        char **names = NULL;
        size_t nn = 0, cap = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
            if (de->d_name[0] == '.') continue;
            if (nn == cap) {
                cap = cap ? 2 * cap : 64;
                char **nb = realloc(names, cap * sizeof *nb);
                if (!nb) break;
                names = nb;
            }
            size_t l = strlen(argv[i]) + strlen(de->d_name) + 2;
            names[nn] = malloc(l);
            if (!names[nn]) break;
            snprintf(names[nn], l, "%s/%s", argv[i], de->d_name);
            nn++;
        }
        closedir(d);
        if (nn) qsort(names, nn, sizeof *names, cmp);
        for (size_t k = 0; k < nn; k++) {
            struct stat fs;
            if (stat(names[k], &fs) == 0 && S_ISREG(fs.st_mode)) {
                fails += run_file(names[k]);
                files++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("replayed %d files, %d unreadable\n", files, fails);
    return fails || !files ? 1 : 0;
}
