/* Loading the CUDA module (cuda_module.h): found, opened with dlopen, checked (ABI and version)
 * and initialised once per process; the result, or the reason there is none, is kept for the
 * life of the process (the module is never unloaded: the CUDA runtime does not support it). */
#include "cuda_module.h"

#include "internal.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef PRX_INSTALL_LIBDIR /* set by CMake: the absolute install libdir */
#define PRX_INSTALL_LIBDIR "/usr/local/lib"
#endif
#ifndef PRX_LIBDIR_NAME /* set by CMake: the libdir relative to the install prefix */
#define PRX_LIBDIR_NAME "lib"
#endif

/* written once under pthread_once, read-only afterwards */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static const prx_cuda_module *module;
static char why[1024];

static prx_status host_fail(prx_status status, const char *message) {
  return prx_fail(status, "%s", message);
}

static const prx_cuda_host host = {host_fail, prx_format_size};

#ifdef PRX_HAVE_CUDA
/* The directory of the object holding this code: libpolyrx.so, or the executable that links
 * libpolyrx statically (the main program's link map has an empty name). 0 when unknown. */
static int own_dir(char *dir, size_t n) {
  Dl_info info;
  struct link_map *lm = NULL;
  char path[PATH_MAX];
  if (dladdr1((void *)&prx_cuda_module_get, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm &&
      lm->l_name && lm->l_name[0]) {
    if (!realpath(lm->l_name, path)) return 0;
  } else {
    ssize_t len = readlink("/proc/self/exe", path, sizeof path - 1);
    if (len <= 0) return 0;
    path[len] = 0;
  }
  char *slash = strrchr(path, '/');
  if (!slash) return 0;
  *slash = 0;
  return snprintf(dir, n, "%s", path[0] ? path : "/") < (int)n;
}

/* Opens path as the module and checks it; 1 when it is the module, else 0 with why set. */
static int open_module(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(why, sizeof why, "the CUDA module cannot be loaded: %s", dlerror());
    return 0;
  }
  const prx_cuda_module *m = (const prx_cuda_module *)dlsym(h, PRX_CUDA_MODULE_SYMBOL);
  if (!m) {
    snprintf(why, sizeof why, "%s is not a polyrx CUDA module (no %s)", path,
             PRX_CUDA_MODULE_SYMBOL);
    dlclose(h);
    return 0;
  }
  if (m->abi != PRX_CUDA_MODULE_ABI || !m->version || strcmp(m->version, prx_version())) {
    snprintf(why, sizeof why,
             "the CUDA module %s is from another polyrx (version %s, ABI %d; this library is "
             "%s, ABI %d)",
             path, m->version ? m->version : "?", m->abi, prx_version(), PRX_CUDA_MODULE_ABI);
    dlclose(h);
    return 0;
  }
  char reason[512] = "";
  int devices = m->init(&host, reason, sizeof reason);
  if (devices <= 0) {
    snprintf(why, sizeof why, "no CUDA device is usable: %s",
             reason[0] ? reason : "none was found");
    return 0; /* kept loaded: the runtime has been initialised */
  }
  module = m;
  return 1;
}

static void load(void) {
  const char *env = getenv("POLYRX_CUDA_MODULE");
  if (env) {
    if (!env[0] || access(env, F_OK)) {
      snprintf(why, sizeof why, "the CUDA module %s was not found (POLYRX_CUDA_MODULE)",
               env[0] ? env : "''");
      return;
    }
    open_module(env);
    return;
  }
  char dir[PATH_MAX], cand[3][PATH_MAX + 64];
  int n = 0;
  if (own_dir(dir, sizeof dir)) {
    snprintf(cand[n++], sizeof cand[0], "%s/%s", dir, PRX_CUDA_MODULE_FILE);
    snprintf(cand[n++], sizeof cand[0], "%s/../%s/%s", dir, PRX_LIBDIR_NAME, PRX_CUDA_MODULE_FILE);
  }
  snprintf(cand[n++], sizeof cand[0], "%s/%s", PRX_INSTALL_LIBDIR, PRX_CUDA_MODULE_FILE);
  for (int i = 0; i < n; i++)
    if (!access(cand[i], F_OK)) {
      open_module(cand[i]);
      return;
    }
  int len = snprintf(why, sizeof why, "the CUDA module %s was not found (looked in",
                     PRX_CUDA_MODULE_FILE);
  for (int i = 0; i < n && len > 0 && (size_t)len < sizeof why; i++) {
    char *slash = strrchr(cand[i], '/');
    *slash = 0;
    len += snprintf(why + len, sizeof why - (size_t)len, "%s %s", i ? "," : "", cand[i]);
  }
  if (len > 0 && (size_t)len < sizeof why - 1) snprintf(why + len, sizeof why - (size_t)len, ")");
}
#else
static void load(void) {
  (void)host;
  snprintf(why, sizeof why,
           "this build of polyrx has no CUDA backend (built without nvcc or "
           "with POLYRX_CUDA=OFF)");
}
#endif

const prx_cuda_module *prx_cuda_module_get(void) {
  pthread_once(&once, load);
  return module;
}

const char *prx_cuda_module_why(void) {
  pthread_once(&once, load);
  return module ? "" : why;
}

prx_status prx_cuda_module_pick(prx_backend requested, const prx_cuda_module **out) {
  *out = NULL;
  switch (requested) {
  case PRX_BACKEND_CPU: return PRX_OK;
  case PRX_BACKEND_CUDA:
    if (!(*out = prx_cuda_module_get()))
      return prx_fail(PRX_ERR_NODEVICE, "the CUDA backend was requested but cannot run: %s",
                      prx_cuda_module_why());
    return PRX_OK;
  case PRX_BACKEND_AUTO: *out = prx_cuda_module_get(); return PRX_OK;
  }
  return prx_fail(PRX_ERR_INVALID, "unknown backend %d", (int)requested);
}
