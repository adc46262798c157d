/*
 * notify.h: the wake-up datagram, a contract between the API pool (sender)
 * and the runners on the same host (receivers). common/notify.c has the
 * theory of operation; the pool links it without any runner code.
 */
#ifndef AGENTTEST_COMMON_NOTIFY_H
#define AGENTTEST_COMMON_NOTIFY_H

#include "buf.h"

/*
 * Bind a unix datagram socket `<dir>/runner-<pid>.sock` (non-blocking,
 * close-on-exec); stale sockets of dead runners in dir are removed. Returns
 * the fd or -1 (the runner then relies on polling). path receives the name.
 */
int notify_bind(const char *dir, struct buf *path);
/*
 * Drain pending datagrams; returns how many were read. When cancels is not
 * NULL it receives how many of them were cancellation hints (the message
 * "c"; "q" says something was queued).
 */
int notify_drain(int fd, int *cancels);
/* Send one datagram to every runner socket in dir (best effort). */
void notify_all(const char *dir, const char *msg);

#endif
