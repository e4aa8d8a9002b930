/*
 * The cheapest closed-loop client this bench can think of: the floor that any
 * load client's CPU per query sits on. libpq only connects and prepares; the
 * loop then writes pre-built Bind/Execute/Sync requests (one send per
 * statement) and reads each reply with blocking recv until ReadyForQuery,
 * checking message boundaries but nothing else. On a Unix socket it waits
 * with poll(POLLIN) first: a reader asleep in recv there is also woken when
 * the server drains the request, and sleeps twice per request. It runs the same statements
 * as dbsweep-load and sysbench, one connection and one thread per client.
 *
 *   floor_client WORKLOAD CLIENTS SECONDS ROWS      (WORKLOAD: point | read-only | update)
 *   connection from the PG* environment; prints "queries N seconds S".
 */
#include <libpq-fe.h>
#include <pthread.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { POINT, RANGE, SUM, ORDER, DISTINCT, UPDATE, NSTMT };
static const char *const SQL[NSTMT] = {
    "SELECT c FROM sbtest1 WHERE id=$1",
    "SELECT c FROM sbtest1 WHERE id BETWEEN $1 AND $2",
    "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN $1 AND $2",
    "SELECT c FROM sbtest1 WHERE id BETWEEN $1 AND $2 ORDER BY c",
    "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN $1 AND $2 ORDER BY c",
    "UPDATE sbtest1 SET c=$1 WHERE id=$2",
};
static const char C_VALUE[] = "00000000000-11111111111-22222222222-33333333333-44444444444-"
                              "55555555555-66666666666-77777777777-88888888888-99999999999";

static int workload, rows;
static int stop;

struct client {
    PGconn *conn;
    int fd, unix_socket;
    uint64_t rng, queries;
    char out[512];
    char in[1 << 16];
};

static void die(const char *what, PGconn *conn) {
    fprintf(stderr, "floor_client: %s: %s\n", what, conn ? PQerrorMessage(conn) : "");
    exit(1);
}

static char *put32(char *p, uint32_t v) {
    v = __builtin_bswap32(v);
    memcpy(p, &v, 4);
    return p + 4;
}

static char *put16(char *p, uint16_t v) {
    v = __builtin_bswap16(v);
    memcpy(p, &v, 2);
    return p + 2;
}

/* One text parameter: length, then bytes. */
static char *put_param(char *p, const char *s, size_t n) {
    p = put32(p, (uint32_t)n);
    memcpy(p, s, n);
    return p + n;
}

/* Bind (unnamed portal, text parameters), Execute, Sync. */
static size_t bind_execute(char *buf, int stmt, const char *const *params, const size_t *lens, int n) {
    char *p = buf;
    *p++ = 'B';
    char *len = p;
    p += 4;
    *p++ = 0; /* portal "" */
    p += sprintf(p, "s%d", stmt) + 1;
    p = put16(p, 0); /* all parameters in text */
    p = put16(p, (uint16_t)n);
    for (int i = 0; i < n; i++) p = put_param(p, params[i], lens[i]);
    p = put16(p, 0); /* results in text */
    put32(len, (uint32_t)(p - len));
    *p++ = 'E';
    p = put32(p, 9);
    *p++ = 0;
    p = put32(p, 0);
    *p++ = 'S';
    p = put32(p, 4);
    return (size_t)(p - buf);
}

/* Reads until ReadyForQuery; an ErrorResponse ends the program. */
static void reply(struct client *c) {
    size_t have = 0, at = 0;
    for (;;) {
        while (have - at >= 5) {
            uint32_t n;
            memcpy(&n, c->in + at + 1, 4);
            n = __builtin_bswap32(n);
            if (have - at < 1 + (size_t)n) break;
            char type = c->in[at];
            if (type == 'E') {
                fprintf(stderr, "floor_client: the server answered with an error\n");
                exit(1);
            }
            at += 1 + n;
            if (type == 'Z') return;
        }
        if (at > 0) { /* keep the partial message at the front */
            memmove(c->in, c->in + at, have - at);
            have -= at;
            at = 0;
        }
        if (c->unix_socket) {
            struct pollfd p = {.fd = c->fd, .events = POLLIN};
            if (poll(&p, 1, -1) < 0) die("poll", NULL);
        }
        ssize_t got = recv(c->fd, c->in + have, sizeof c->in - have, 0);
        if (got <= 0) die("recv", NULL);
        have += (size_t)got;
    }
}

static void send_all(struct client *c, const char *buf, size_t n) {
    while (n > 0) {
        ssize_t put = send(c->fd, buf, n, 0);
        if (put <= 0) die("send", NULL);
        buf += put;
        n -= (size_t)put;
    }
}

static void simple(struct client *c, const char *sql) {
    size_t n = strlen(sql) + 1;
    c->out[0] = 'Q';
    put32(c->out + 1, (uint32_t)(n + 4));
    memcpy(c->out + 5, sql, n);
    send_all(c, c->out, n + 5);
    reply(c);
    c->queries++;
}

static uint64_t next(struct client *c) {
    c->rng ^= c->rng << 13;
    c->rng ^= c->rng >> 7;
    c->rng ^= c->rng << 17;
    return c->rng;
}

static void run(struct client *c, int stmt, int span) {
    char a[24], b[24];
    long id = 1 + (long)(next(c) % (uint64_t)rows);
    const char *params[2];
    size_t lens[2];
    int n;
    if (stmt == UPDATE) {
        params[0] = C_VALUE;
        lens[0] = sizeof C_VALUE - 1;
        lens[1] = (size_t)sprintf(b, "%ld", id);
        params[1] = b;
        n = 2;
    } else {
        lens[0] = (size_t)sprintf(a, "%ld", id);
        params[0] = a;
        lens[1] = (size_t)sprintf(b, "%ld", id + span - 1);
        params[1] = b;
        n = stmt == POINT ? 1 : 2;
    }
    send_all(c, c->out, bind_execute(c->out, stmt, params, lens, n));
    reply(c);
    c->queries++;
}

static void *client_main(void *arg) {
    struct client *c = arg;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        if (workload == POINT) {
            run(c, POINT, 1);
        } else if (workload == UPDATE) {
            run(c, UPDATE, 1);
        } else { /* sysbench oltp_read_only, range 100 */
            simple(c, "BEGIN");
            for (int i = 0; i < 10; i++) run(c, POINT, 1);
            for (int s = RANGE; s <= DISTINCT; s++) run(c, s, 100);
            simple(c, "COMMIT");
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: floor_client point|read-only|update CLIENTS SECONDS ROWS\n");
        return 2;
    }
    workload = !strcmp(argv[1], "point") ? POINT : !strcmp(argv[1], "update") ? UPDATE : RANGE;
    int clients = atoi(argv[2]), seconds = atoi(argv[3]);
    rows = atoi(argv[4]);
    struct client *cs = calloc((size_t)clients, sizeof *cs);
    pthread_t *ts = calloc((size_t)clients, sizeof *ts);
    if (!cs || !ts || clients <= 0 || seconds <= 0 || rows <= 0) return 2;
    for (int i = 0; i < clients; i++) {
        cs[i].conn = PQconnectdb("");
        if (PQstatus(cs[i].conn) != CONNECTION_OK) die("connect", cs[i].conn);
        for (int s = 0; s < NSTMT; s++) {
            char name[8];
            sprintf(name, "s%d", s);
            PGresult *r = PQprepare(cs[i].conn, name, SQL[s], 0, NULL);
            if (PQresultStatus(r) != PGRES_COMMAND_OK) die("prepare", cs[i].conn);
            PQclear(r);
        }
        cs[i].fd = PQsocket(cs[i].conn);
        /* libpq leaves its socket non-blocking and polls; the floor blocks in recv instead. */
        int flags = fcntl(cs[i].fd, F_GETFL);
        if (flags < 0 || fcntl(cs[i].fd, F_SETFL, flags & ~O_NONBLOCK) < 0) die("fcntl", NULL);
        int domain;
        socklen_t len = sizeof domain;
        if (getsockopt(cs[i].fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0) die("getsockopt", NULL);
        cs[i].unix_socket = domain == AF_UNIX;
        cs[i].rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < clients; i++) pthread_create(&ts[i], NULL, client_main, &cs[i]);
    sleep((unsigned)seconds);
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    uint64_t queries = 0;
    for (int i = 0; i < clients; i++) {
        pthread_join(ts[i], NULL);
        queries += cs[i].queries;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (int i = 0; i < clients; i++) PQfinish(cs[i].conn);
    printf("queries %llu seconds %.3f\n", (unsigned long long)queries,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    return 0;
}
