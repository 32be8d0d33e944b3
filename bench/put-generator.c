/*
 * A MetaQ put generator as cheap as redis-benchmark (bench/plain-put-floor.ts builds it with
 * gcc at run time): one loopback connection, one pipeline of pre-encoded puts read from a
 * file (their opaques 0..P-1, encoded by meta's own writePut) sent again and again; after
 * each send every reply of the pipeline is read and checked — `result 200`, the opaque of
 * the put it answers, in order — before the next send, as redis-benchmark -c 1 -P P does.
 * Any other reply, a short read or a closed connection ends the run with exit status 1.
 *
 *   put-generator HOST PORT PIPELINE_FILE PUTS_PER_PIPELINE TOTAL_PUTS
 *
 * Prints one JSON line: {"messages":N,"ns":elapsed,"cpuUs":user+system CPU of this process}.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define READ_BYTES (1 << 20)

static void fail(const char *what, long at) {
  fprintf(stderr, "put-generator: %s (reply %ld)\n", what, at);
  exit(1);
}

static char *read_file(const char *path, size_t *length) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) fail("cannot open the pipeline file", -1);
  struct stat st;
  if (fstat(fileno(f), &st) != 0) fail("cannot stat the pipeline file", -1);
  char *buf = malloc(st.st_size);
  if (buf == NULL || fread(buf, 1, st.st_size, f) != (size_t)st.st_size) fail("cannot read the pipeline file", -1);
  fclose(f);
  *length = st.st_size;
  return buf;
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: put-generator HOST PORT PIPELINE_FILE PUTS_PER_PIPELINE TOTAL_PUTS\n");
    return 2;
  }
  size_t pipeline_bytes;
  char *pipeline = read_file(argv[3], &pipeline_bytes);
  long per_pipeline = atol(argv[4]);
  long total = atol(argv[5]);
  if (per_pipeline <= 0 || total <= 0 || total % per_pipeline != 0) fail("TOTAL_PUTS must be a positive multiple of PUTS_PER_PIPELINE", -1);

  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
  if (inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) fail("invalid HOST: expected an IPv4 address", -1);
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) fail(strerror(errno), -1);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

  char *in = malloc(READ_BYTES);
  size_t have = 0; /* unparsed bytes at in[0..have) */
  long acked = 0;
  double t0 = now_ns();
  while (acked < total) {
    for (size_t off = 0; off < pipeline_bytes;) {
      ssize_t n = write(fd, pipeline + off, pipeline_bytes - off);
      if (n < 0) {
        if (errno == EINTR) continue;
        fail(strerror(errno), acked);
      }
      off += n;
    }
    long expected = 0; /* the opaque of the next reply */
    while (expected < per_pipeline) {
      ssize_t n = read(fd, in + have, READ_BYTES - have);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail(n == 0 ? "connection closed" : strerror(errno), acked);
      have += n;
      size_t pos = 0;
      while (expected < per_pipeline) {
        /* "result 200 <len> <opaque>\r\n<len bytes>" */
        char *eol = memchr(in + pos, '\r', have - pos);
        if (eol == NULL || (size_t)(eol - in) + 2 > have) break;
        if (have - pos < 13 || memcmp(in + pos, "result 200 ", 11) != 0) {
          *eol = 0;
          fprintf(stderr, "put-generator: refused: %s\n", in + pos);
          fail("a put was not acknowledged with result 200", acked);
        }
        char *p = in + pos + 11;
        long length = 0, opaque = 0;
        while (*p >= '0' && *p <= '9') length = length * 10 + (*p++ - '0');
        if (*p++ != ' ') fail("malformed reply length", acked);
        while (p < eol && *p >= '0' && *p <= '9') opaque = opaque * 10 + (*p++ - '0');
        if (p != eol) fail("malformed reply opaque", acked);
        size_t end = (size_t)(eol - in) + 2 + length;
        if (end > have) break;
        if (opaque != expected) fail("an ack for the wrong opaque", acked);
        expected++;
        acked++;
        pos = end;
      }
      memmove(in, in + pos, have - pos);
      have -= pos;
      if (have == READ_BYTES) fail("a reply longer than the read buffer", acked);
    }
    if (have != 0) fail("bytes after the last reply of a pipeline", acked);
  }
  double ns = now_ns() - t0;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double cpu_us = ru.ru_utime.tv_sec * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1e6 + ru.ru_stime.tv_usec;
  printf("{\"messages\":%ld,\"ns\":%.0f,\"cpuUs\":%.0f}\n", acked, ns, cpu_us);
  close(fd);
  return 0;
}
