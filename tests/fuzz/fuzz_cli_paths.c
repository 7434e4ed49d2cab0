/* Fuzz target: the command's output-path check, cli_outputs_distinct (cli/common.c, linked in),
 * on lists of up to 8 (role, path, input or output) drawn from the bytes over a small fixed tree
 * made once in a temporary directory:
 *
 *   a          a file                     a2       a hard link to a
 *   s          a symbolic link to a       b        another file
 *   d/         a directory                d/c      a file in it
 *   (new)      names that do not exist yet, spelt several ways (./new, d/../new, DIR/new)
 *   /dev/null  a device, which any number of entries may share
 *   -          standard output (outputs only)
 *
 * Each spelling has a file identity written out here by hand (the oracle: a, ./a, d/../a, DIR/a,
 * a2 and s are one file). cli_outputs_distinct must fail exactly when some output shares its
 * identity with another entry (input or output), with one error line naming the roles of two
 * such entries; and succeed, printing nothing, otherwise. */
#include "fuzz.h"

#include "cli.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

typedef struct {
  const char *spelling; /* relative to dir; "@" prefix: absolute (dir prepended) */
  int id;               /* the file it names; 0: may be shared (a device) */
  int input_ok;         /* may be an input (not "-": standard input's kind depends on the run) */
} entry;

static const entry vocab[] = {
    {"a", 1, 1},         {"./a", 1, 1},      {"d/../a", 1, 1}, {"@a", 1, 1},     {"a2", 1, 1},
    {"s", 1, 1},         {"b", 2, 1},        {"d/c", 3, 1},    {"d/./c", 3, 1},  {"new", 4, 1},
    {"./new", 4, 1},     {"d/../new", 4, 1}, {"@new", 4, 1},   {"d/new", 5, 1},  {"./d/new", 5, 1},
    {"/dev/null", 0, 1}, {"-", 6, 0},        {"new2", 7, 1},   {"@d/new", 5, 1}, {"b/../a", 8, 1},
};
#define N_VOCAB (sizeof vocab / sizeof vocab[0])

static void remove_tree(void) {
  if (chdir(dir) != 0) return;
  unlink("a"), unlink("a2"), unlink("s"), unlink("b"), unlink("d/c"), rmdir("d");
  if (chdir("/") == 0) rmdir(dir);
}

/* Makes the tree (the working directory is the caller's again afterwards). */
static void make_tree(void) {
  snprintf(dir, sizeof dir, "%s/polyrx-fuzz-paths-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  FUZZ_CHECK(mkdtemp(dir), "mkdtemp");
  int here = open(".", O_RDONLY | O_DIRECTORY);
  FUZZ_CHECK(here >= 0 && chdir(dir) == 0, "chdir");
  FILE *f = fopen("a", "w");
  FUZZ_CHECK(f && fputs("a", f) >= 0 && !fclose(f), "a");
  f = fopen("b", "w");
  FUZZ_CHECK(f && fputs("b", f) >= 0 && !fclose(f), "b");
  FUZZ_CHECK(mkdir("d", 0777) == 0, "d");
  f = fopen("d/c", "w");
  FUZZ_CHECK(f && !fclose(f), "d/c");
  FUZZ_CHECK(link("a", "a2") == 0 && symlink("a", "s") == 0, "links");
  FUZZ_CHECK(fchdir(here) == 0, "fchdir");
  close(here);
  atexit(remove_tree);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dir[0]) make_tree();
  fuzz_bytes b = {data, size};
  size_t n = fuzz_u8(&b) % 9;
  cli_path paths[8];
  char spell[8][512], roles[8][8];
  int ids[8];
  for (size_t i = 0; i < n; i++) {
    uint8_t v = fuzz_u8(&b);
    const entry *e = &vocab[(v & 0x7f) % N_VOCAB];
    int input = (v & 0x80) && e->input_ok;
    if (e->spelling[0] == '@')
      snprintf(spell[i], sizeof spell[i], "%s/%s", dir, e->spelling + 1);
    else
      snprintf(spell[i], sizeof spell[i], "%s", e->spelling);
    snprintf(roles[i], sizeof roles[i], "R%zu", i);
    paths[i] = (cli_path){roles[i], spell[i], input};
    ids[i] = e->id;
  }
  /* the oracle: some output shares a nonzero identity with another entry */
  int clash = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++)
      if (i != j && !paths[i].is_input && ids[i] && ids[i] == ids[j]) clash = 1;
  /* the error line, captured */
  fflush(stderr);
  int saved = dup(STDERR_FILENO);
  FILE *cap = tmpfile();
  FUZZ_CHECK(saved >= 0 && cap, "stderr capture");
  dup2(fileno(cap), STDERR_FILENO);
  /* relative spellings are relative to the tree: the check runs there (and the working
   * directory is the caller's again for the driver's crash files) */
  int here = open(".", O_RDONLY | O_DIRECTORY);
  FUZZ_CHECK(here >= 0 && chdir(dir) == 0, "chdir");
  int rc = cli_outputs_distinct("fuzz", paths, n);
  FUZZ_CHECK(fchdir(here) == 0, "fchdir");
  close(here);
  fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  char msg[2048] = "";
  rewind(cap);
  size_t len = fread(msg, 1, sizeof msg - 1, cap);
  msg[len] = '\0';
  fclose(cap);
  FUZZ_CHECK(rc == (clash ? 1 : -1), "cli_outputs_distinct gave %d, expected %s: %s", rc,
             clash ? "a clash" : "none", msg);
  if (!clash) {
    FUZZ_CHECK(len == 0, "success printed '%s'", msg);
  } else {
    /* one line, naming two entries of one identity, one of them an output */
    FUZZ_CHECK(strchr(msg, '\n') == msg + len - 1, "not one line: '%s'", msg);
    int named = 0;
    for (size_t i = 0; i < n && !named; i++)
      for (size_t j = 0; j < n && !named; j++) {
        char ri[16], rj[16];
        snprintf(ri, sizeof ri, "%s ", roles[i]);
        snprintf(rj, sizeof rj, "%s ", roles[j]);
        named = i != j && ids[i] && ids[i] == ids[j] && !paths[i].is_input && strstr(msg, ri) &&
                strstr(msg, rj);
      }
    FUZZ_CHECK(named, "the message does not name two entries of one file: '%s'", msg);
  }
  return 0;
}
