/*
 * sock.c: the listening socket the master opens before forking workers.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "fcgi/app.h"

#define SOCK_BACKLOG 1024

/* Listen on a unix socket at path (replacing a stale socket file). */
static int sock_unix(const char *path, struct buf *err)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd = -1;

	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sa.sun_path) {
		buf_printf(err, "socket path too long: %s", path);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			buf_printf(err, "%s exists and is not a socket", path);
			return -1;
		}
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0) {
			close(probe);
			buf_printf(err, "%s is in use by another running server", path);
			return -1;
		}
		if (probe >= 0)
			close(probe);
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || chmod(path, 0660) != 0 ||
	    listen(fd, SOCK_BACKLOG) != 0) {
		buf_printf(err, "cannot listen on %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Listen on HOST:PORT ([v6]:PORT accepted). */
static int sock_tcp(const char *spec, struct buf *err)
{
	struct addrinfo hints, *res = NULL;
	const char *colon = strrchr(spec, ':');
	char *host = NULL;
	int fd = -1, one = 1, rc;

	if (colon == NULL) {
		buf_printf(err, "socket must be an absolute path or HOST:PORT, not %s", spec);
		return -1;
	}
	host = xstrndup(spec, (size_t)(colon - spec));
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &res);
	if (rc != 0) {
		buf_printf(err, "cannot resolve %s: %s", spec, gai_strerror(rc));
		goto out;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, SOCK_BACKLOG) != 0) {
		buf_printf(err, "cannot listen on %s: %s", spec, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
out:
	if (res != NULL)
		freeaddrinfo(res);
	free(host);
	return fd;
}

int sock_listen(const char *spec, struct buf *err)
{
	return spec[0] == '/' ? sock_unix(spec, err) : sock_tcp(spec, err);
}
