import Foundation

// The `typedstore` command-line tool. It uses only TypedStore's public API: a store keeps its
// model, so every command but the demo opens a store without the application's classes.
// Exit status: 0 success, 1 failure, 2 usage error, 3 a store that cannot be opened.
// Commands.swift is the table of commands (each one's help and the function that runs it);
// Tool.swift parses the command line and runs the command it names.

// A file size limit makes writes fail with EFBIG, reported like a full disk, instead of
// killing the process.
signal(SIGXFSZ, SIG_IGN)

exit(await Tool.run(Array(CommandLine.arguments.dropFirst())))
