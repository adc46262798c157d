#include "readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xalloc.h"

int read_file_max(const char *path, size_t max, int nofollow, char **out, size_t *len)
{
	int rc = -1, fd;
	char *p = NULL;
	struct stat st;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (nofollow ? O_NOFOLLOW : 0));
	if (fd < 0 || fstat(fd, &st) != 0)
		goto out;
	if (!S_ISREG(st.st_mode)) {
		errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		goto out;
	}
	if ((uintmax_t)st.st_size > max) {
		errno = EFBIG;
		goto out;
	}
	size_t n = (size_t)st.st_size, got = 0;
	p = xmalloc(n + 1);
	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = EIO; /* shrank while reading */
			goto out;
		}
		got += (size_t)r;
	}
	p[n] = '\0';
	*out = p;
	*len = n;
	p = NULL;
	rc = 0;
out:
	free(p);
	if (fd >= 0) {
		int saved = errno;
		close(fd);
		errno = saved;
	}
	return rc;
}
