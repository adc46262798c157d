#include "secret.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

/* Create path with 32 random bytes, mode 0600. EEXIST is not an error. */
static bool secret_create(const char *path, struct buf *err)
{
	unsigned char key[SECRET_BYTES];
	bool ok = false;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		if (errno == EEXIST)
			return true;
		buf_printf(err, "cannot create the secret file %s: %s", path, strerror(errno));
		return false;
	}
	randombytes_buf(key, sizeof key);
	size_t off = 0;
	while (off < sizeof key) {
		ssize_t w = write(fd, key + off, sizeof key - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			buf_printf(err, "cannot write the secret file %s: %s", path, strerror(errno));
			goto out;
		}
		off += (size_t)w;
	}
	if (fchmod(fd, 0600) != 0 || fsync(fd) != 0) {
		buf_printf(err, "cannot finish the secret file %s: %s", path, strerror(errno));
		goto out;
	}
	ok = true;
out:
	sodium_memzero(key, sizeof key);
	close(fd);
	if (!ok)
		unlink(path);
	return ok;
}

bool secret_load(const char *path, bool create, unsigned char key[SECRET_BYTES], struct buf *err)
{
	struct stat st;
	bool ok = false;
	int fd = -1;

	if (create && !secret_create(path, err))
		return false;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		buf_printf(err, "cannot open the secret file %s: %s", path, strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		buf_printf(err, "the secret file %s is not a regular file", path);
		goto out;
	}
	if ((st.st_mode & 077) != 0) {
		buf_printf(err, "the secret file %s has mode %04o; refusing to use it (chmod 600 it)",
		           path, (unsigned)(st.st_mode & 07777));
		goto out;
	}
	if (st.st_size != SECRET_BYTES) {
		buf_printf(err, "the secret file %s must hold exactly %d bytes", path, SECRET_BYTES);
		goto out;
	}
	size_t off = 0;
	while (off < SECRET_BYTES) {
		ssize_t r = read(fd, key + off, SECRET_BYTES - off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			buf_printf(err, "cannot read the secret file %s", path);
			goto out;
		}
		off += (size_t)r;
	}
	ok = true;
out:
	if (fd >= 0)
		close(fd);
	if (!ok)
		sodium_memzero(key, SECRET_BYTES);
	return ok;
}
