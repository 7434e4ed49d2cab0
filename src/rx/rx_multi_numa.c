/* prx_rx_multi's placement: each GPU worker's thread (and so the memory it touches first: its
 * receiver's buffers) on the NUMA node of its GPU, read from sysfs (no libnuma). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "rx_multi_internal.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCI_DIR "/sys/bus/pci/devices"

static int read_line(const char *path, char *buf, size_t n) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int ok = fgets(buf, (int)n, f) != NULL;
  fclose(f);
  return ok ? 0 : -1;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* NVIDIA (vendor 0x10de) VGA (0x0300xx) or 3-D controller (0x0302xx) */
static int is_nvidia_gpu(const char *name) {
  char path[512], v[64], c[64];
  snprintf(path, sizeof path, PCI_DIR "/%s/vendor", name);
  if (read_line(path, v, sizeof v) || strncmp(v, "0x10de", 6)) return 0;
  snprintf(path, sizeof path, PCI_DIR "/%s/class", name);
  if (read_line(path, c, sizeof c)) return 0;
  return !strncmp(c, "0x0300", 6) || !strncmp(c, "0x0302", 6);
}

static int host_has_several_nodes(void) {
  FILE *f = fopen("/sys/devices/system/node/node1/cpulist", "r");
  if (!f) return 0;
  fclose(f);
  return 1;
}

/* NVIDIA's GPUs on the PCI bus, their names sorted (bus order), at most max. */
static size_t list_gpus(char **names, size_t max) {
  DIR *d = opendir(PCI_DIR);
  if (!d) return 0;
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < max)
    if (e->d_name[0] != '.' && is_nvidia_gpu(e->d_name)) names[n++] = strdup(e->d_name);
  closedir(d);
  qsort(names, n, sizeof *names, cmp_names);
  return n;
}

size_t prx_rx_multi_gpu_count(void) {
  if (!prx_cuda_available()) return 0;
  const char *vis = getenv("CUDA_VISIBLE_DEVICES");
  if (vis) {
    size_t n = *vis ? 1 : 0;
    for (const char *p = vis; *p; p++) n += *p == ',';
    return n;
  }
  char *names[256];
  size_t n = list_gpus(names, 256);
  for (size_t i = 0; i < n; i++) free(names[i]);
  return n ? n : 1; /* the module found a device that sysfs does not show */
}

int rxm_gpu_numa_node(int ordinal) {
  /* CUDA_VISIBLE_DEVICES renumbers the devices: the bus order no longer says which is which */
  if (ordinal < 0 || getenv("CUDA_VISIBLE_DEVICES") || !host_has_several_nodes()) return -1;
  char *names[256];
  size_t n = list_gpus(names, 256);
  int node = -1;
  if ((size_t)ordinal < n && names[ordinal]) {
    char path[512], buf[64];
    snprintf(path, sizeof path, PCI_DIR "/%s/numa_node", names[ordinal]);
    if (!read_line(path, buf, sizeof buf)) node = atoi(buf);
  }
  for (size_t i = 0; i < n; i++) free(names[i]);
  return node;
}

int rxm_pin_to_node(int node) {
  if (node < 0) return -1;
  char path[128], list[4096];
  snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", node);
  if (read_line(path, list, sizeof list)) return -1;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (char *p = list; *p && *p != '\n';) { /* "0-15,32-47" */
    char *end;
    long a = strtol(p, &end, 10), b = a;
    if (end == p) return -1;
    if (*end == '-') b = strtol(end + 1, &end, 10);
    for (long c = a; c <= b && c < CPU_SETSIZE; c++) CPU_SET((int)c, &set);
    p = *end == ',' ? end + 1 : end;
  }
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) ? -1 : 0;
}
