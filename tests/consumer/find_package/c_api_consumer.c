/* SPDX-License-Identifier: MIT */
/* A C program against the installed C interface: the header is found through topopreempt::c_api
 * alone, the static library links from a C translation unit, and a cluster round-trips. */
#include <stdio.h>
#include <string.h>

#include "topopreempt_c.h"

int main(void) {
  if (strcmp(tp_library_version(), EXPECTED_VERSION) != 0) {
    fprintf(stderr, "C interface reports %s, package is %s\n", tp_library_version(),
            EXPECTED_VERSION);
    return 1;
  }
  tp_cluster* cluster = tp_cluster_create();
  if (cluster == NULL) return 1;
  /* No topology yet: sealing must be refused with a status and a message, never a crash. */
  tp_status status = tp_cluster_seal(cluster);
  printf("topopreempt C interface %s (ABI %u); seal before define: %s (%s)\n",
         tp_library_version(), (unsigned)tp_abi_version(), tp_status_name(status),
         tp_cluster_last_error(cluster));
  tp_cluster_destroy(cluster);
  return status == TP_OK ? 1 : 0;
}
