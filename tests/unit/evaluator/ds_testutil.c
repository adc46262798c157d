/* ds_testutil: see ds_testutil.h. Test-only code: aborts on any error. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/evaluator/ds_testutil.h"

void ds_tmpdir(char *buf, size_t len)
{
	const char *t = getenv("TMPDIR");
	int n = snprintf(buf, len, "%s/ds-test-XXXXXX", t && *t ? t : "/tmp");
	if (n < 0 || (size_t)n >= len || !mkdtemp(buf))
		abort();
}

void ds_rmtree(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return;
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		struct dirent *de;
		while (d && (de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			char sub[4096];
			if (snprintf(sub, sizeof sub, "%s/%s", path, de->d_name) < (int)sizeof sub)
				ds_rmtree(sub);
		}
		if (d)
			closedir(d);
		rmdir(path);
	} else {
		unlink(path);
	}
}

int ds_count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;
	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

void ds_flip_byte(const char *path, long off)
{
	FILE *f = fopen(path, "r+b");
	if (!f || fseek(f, off, SEEK_SET) != 0)
		abort();
	int c = fgetc(f);
	if (c == EOF || fseek(f, off, SEEK_SET) != 0 || fputc(c ^ 1, f) == EOF)
		abort();
	fclose(f);
}

void ds_replace_in_file(const char *path, const char *from, const char *to)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		abort();
	static char text[1 << 20];
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	char *hit = strstr(text, from);
	if (!hit) {
		fprintf(stderr, "ds_replace_in_file: \"%s\" not in %s\n", from, path);
		abort();
	}
	f = fopen(path, "wb");
	if (!f)
		abort();
	fwrite(text, 1, (size_t)(hit - text), f);
	fputs(to, f);
	fputs(hit + strlen(from), f);
	fclose(f);
}

void ds_write_text(const char *dir, const char *name, const char *text)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f)
		abort();
	fputs(text, f);
	fclose(f);
}
