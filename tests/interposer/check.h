/* check.h - what the interposer's test programs share: failures counted per
 * rank and reported with the rank, and one verdict agreed by every rank. The
 * programs call MPI only (never libmatexcomm): the interposer is preloaded. */
#ifndef MATEX_INTERPOSER_TEST_CHECK_H
#define MATEX_INTERPOSER_TEST_CHECK_H

#include <mpi.h>
#include <stddef.h>

/* Records a failure (printed with the world rank, at most 20 per rank). */
void check_fail(const char* format, ...);
/* check_fail unless `ok`. */
void check(int ok, const char* format, ...);
/* Failures so far on this rank. */
long check_failures(void);
/* Agrees on the verdict over MPI_COMM_WORLD (with PMPI, never through the
 * interposer), prints "<name>: N checks failed" or "<name>: all passed" on
 * rank 0, and returns the exit status for main. */
int check_verdict(const char* name);
/* Counts one check made. */
void check_count(void);

#endif
