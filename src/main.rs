fn main() -> std::process::ExitCode {
    socialite::cli::main()
}
