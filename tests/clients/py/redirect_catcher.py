"""A one-page HTTP server on a free loopback port standing for an app's redirect URI:
it records the query of every request for /callback and answers a page saying so."""

import http.server
import threading
import urllib.parse


class Catcher:
    def __init__(self):
        self.queries = []
        catcher = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                url = urllib.parse.urlsplit(self.path)
                if url.path == "/callback":  # not the browser's /favicon.ico
                    catcher.queries.append(urllib.parse.parse_qs(url.query))
                body = b"<html><body><p id='landed'>redirected</p></body></html>"
                self.send_response(200)
                self.send_header("content-type", "text/html")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.uri = f"http://127.0.0.1:{self.server.server_address[1]}/callback"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
