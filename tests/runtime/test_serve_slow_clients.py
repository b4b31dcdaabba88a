"""pmcprof serve: one client address cannot take every slot, a request's head has an absolute
deadline, and a request with a body is answered before its body is read (issue 20, defect 4).

- 600 trickling sockets from 127.0.0.1 (each sends a request head a few bytes at a time, a
  byte every 0.5 s, never finishing it): serve took up to 512 connections from anyone and the
  10 s idle timeout restarted on every byte, so good scrapes from elsewhere timed out. Now at
  most 16 are held per address (the rest are closed at once): good scrapes from 127.0.0.2
  keep a median within 2x of an undisturbed run in the same test (1 ms of slack for
  sub-millisecond medians) and a max within 100 ms of its max.
- One trickling socket from 127.0.0.4 is closed 10 s after it connected (the head deadline),
  however often it sends a byte (before: never, while it kept sending).
- Unauthenticated requests with a body are answered 401 from their head, at once, without
  sending the body: a POST announcing 50 MB (it was read whole before the 401) and a chunked
  POST (it stayed open 15 s).
"""
import os
import shutil
import socket
import tempfile
import threading
import time
import unittest

import pmcprof_testlib as t
import serve_testlib as s

GOOD = ("alice", "correct horse")


def first_answer(sock, timeout):
    """Reads until the end of an HTTP head or EOF: (seconds, the status line or None)."""
    t0 = time.monotonic()
    sock.settimeout(timeout)
    buf = b""
    try:
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(4096)
            if not chunk:
                break
            buf += chunk
    except socket.timeout:
        return time.monotonic() - t0, None
    line = buf.split(b"\r\n", 1)[0].decode(errors="replace")
    return time.monotonic() - t0, (line or None)


class SlowClientsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="pmcprof-slow-")
        path = os.path.join(cls.tmp, "web.yml")
        with open(path, "w") as f:
            f.write(f"basic_auth_users:\n  {GOOD[0]}: '{s.bcrypt_hash(GOOD[1], cost=4)}'\n")
        cls.config = path

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def serve(self):
        return s.serve_up(["-e", "task-clock", "--web.config.file", self.config],
                          lambda srv: s.timed_get(srv.port, auth=GOOD,
                                                  source="127.0.0.2")[1] == 200)

    def scrapes(self, port, n):
        lat = []
        for _ in range(n):
            took, status = s.timed_get(port, source="127.0.0.2", auth=GOOD)
            self.assertEqual(status, 200)
            lat.append(took)
            time.sleep(0.02)
        return lat

    def test_trickling_sockets_and_the_head_deadline(self):
        srv = self.serve()
        socks = []
        try:
            base = self.scrapes(srv.port, 40)
            # The lone trickler: a byte every 0.5 s, from its own address.
            lone = socket.create_connection(("127.0.0.1", srv.port), source_address=("127.0.0.4", 0))
            lone_t0 = time.monotonic()
            lone_closed = []
            stop = threading.Event()

            def trickle_lone():
                lone.sendall(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
                while not stop.is_set():
                    try:
                        lone.sendall(b"a")
                    except OSError:
                        break
                    lone.settimeout(0.5)
                    try:
                        if lone.recv(1) == b"":
                            break
                    except socket.timeout:
                        continue
                    except OSError:
                        break
                lone_closed.append(time.monotonic() - lone_t0)
            lone_thread = threading.Thread(target=trickle_lone)
            lone_thread.start()

            for _ in range(600):
                c = socket.socket()
                c.settimeout(2)
                c.bind(("127.0.0.1", 0))
                try:
                    c.connect(("127.0.0.1", srv.port))
                    c.sendall(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
                except OSError:
                    pass
                socks.append(c)

            def trickle_all():
                while not stop.is_set():
                    for c in socks:
                        try:
                            c.send(b"a", socket.MSG_DONTWAIT)
                        except OSError:
                            pass
                    stop.wait(0.5)
            trickler = threading.Thread(target=trickle_all)
            trickler.start()
            time.sleep(0.3)
            flood = self.scrapes(srv.port, 40)
            # How many of the 600 are still open: a closed one reads EOF or a reset.
            held = 0
            for c in socks:
                c.setblocking(False)
                try:
                    held += c.recv(1) != b""
                except BlockingIOError:
                    held += 1
                except OSError:
                    pass
            stop.set()
            trickler.join()
            for c in socks:
                c.close()
            socks.clear()
            # The lone trickler, still trickling, is cut by the head deadline (10 s).
            stop.clear()
            lone_thread.join(timeout=15)
            stop.set()
            lone_thread.join()
            lone.close()
        finally:
            for c in socks:
                c.close()
            rc, _, err = srv.close()
        self.assertEqual(rc, 0, err)
        t.log(f"undisturbed: median {s.median(base) * 1e3:.2f} ms, max {max(base) * 1e3:.1f} ms; "
              f"600 trickling sockets from 127.0.0.1 ({held} held open): median "
              f"{s.median(flood) * 1e3:.2f} ms, max {max(flood) * 1e3:.1f} ms; the lone "
              f"trickler closed after {lone_closed[0] if lone_closed else float('nan'):.1f} s")
        self.assertLessEqual(held, 16)
        self.assertLessEqual(s.median(flood), max(2 * s.median(base), s.median(base) + 0.001))
        self.assertLess(max(flood), max(base) + 0.100)
        self.assertTrue(lone_closed and 9.0 <= lone_closed[0] <= 12.0,
                        f"the lone trickler: {lone_closed}")

    def test_401_before_the_body(self):
        srv = self.serve()
        try:
            for what, head in (
                    ("POST of 50 MB", "Content-Length: 50000000\r\n"),
                    ("chunked POST", "Transfer-Encoding: chunked\r\n")):
                with socket.create_connection(("127.0.0.1", srv.port)) as c:
                    c.sendall(f"POST /metrics HTTP/1.1\r\nHost: x\r\n{head}\r\n".encode())
                    took, line = first_answer(c, 5)
                t.log(f"{what}, head only: {line!r} after {took * 1e3:.1f} ms")
                self.assertIsNotNone(line, f"{what}: no answer within 5 s without the body")
                self.assertIn(" 401 ", line + " ", what)
                self.assertLess(took, 2.0, what)
        finally:
            srv.close()


if __name__ == "__main__":
    raise SystemExit(t.main(requires=("root", "python:crypt"), doc=__doc__))
