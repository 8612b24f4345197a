using System.CommandLine;
using BoundedWork.Cli.Targets;

namespace BoundedWork.Cli.Commands;

/// <summary>The options every verb shares: which process, or which socket; JSON output; how long to wait.</summary>
internal static class CommonOptions
{
    public static readonly Option<int?> ProcessId = new("--process-id", "-p")
    {
        Description = "The process to talk to (see 'bw ps'). Optional when only one process exposes BoundedWork.",
        Recursive = true,
        CustomParser = NumberParsers.WholeNumber,
    };

    public static readonly Option<string?> Socket = new("--socket")
    {
        Description = "The app's socket file, when it is not in the per-process folder (BoundedWorkAdminOptions.LocalSocketPath).",
        Recursive = true,
    };

    public static readonly Option<bool> Json = new("--json")
    {
        Description = "Print the app's JSON document instead of a table (for scripts; the same document curl --unix-socket gets).",
        Recursive = true,
    };

    public static readonly Option<double> Timeout = new("--timeout")
    {
        Description = "Seconds to wait for the app's answer.",
        DefaultValueFactory = _ => 5,
        CustomParser = NumberParsers.Seconds,
        Recursive = true,
    };

    public static AdminSocketClient Client(ParseResult result) =>
        Target.Resolve(result.GetValue(ProcessId), result.GetValue(Socket), TimeSpan.FromSeconds(Math.Clamp(result.GetValue(Timeout), 0.1, 3600)));
}
