# Build stage: compile the release binary with the locked dependency set.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY .cargo ./.cargo
COPY src ./src
COPY benches ./benches
RUN cargo build --release --locked --bin socialite

# Runtime stage: the binary alone on a slim base, as an unprivileged user.
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home /var/lib/socialite socialite \
    && mkdir -p /var/lib/socialite && chown socialite /var/lib/socialite
COPY --from=build /src/target/release/socialite /usr/local/bin/socialite
USER socialite
WORKDIR /var/lib/socialite
EXPOSE 8080
ENV SOCIALITE_STORAGE__PATH=/var/lib/socialite/socialite.db
HEALTHCHECK --interval=10s --timeout=3s --retries=5 CMD curl -fsS http://127.0.0.1:8080/readyz || exit 1
CMD ["socialite", "serve", "--listen", "0.0.0.0:8080"]
