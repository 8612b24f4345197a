namespace BoundedWork.Cli;

/// <summary>The exit codes scripts can rely on (documented in docs/cli.md and in <c>bw --help</c>).</summary>
internal static class ExitCodes
{
    /// <summary>Done; for <c>doctor</c>: the ThreadPool is not starved.</summary>
    public const int Ok = 0;

    /// <summary>The app refused the request (unknown executor, invalid setting, shut down): the reason is printed.</summary>
    public const int Refused = 1;

    /// <summary>The command line is wrong (unknown verb or option, a value that is not a number).</summary>
    public const int Usage = 2;

    /// <summary>
    /// The target could not be reached or did not speak the BoundedWork protocol: no such process, no socket, a stale
    /// socket, permission denied, no answer in time, an answer that is not the admin API, no diagnostics port.
    /// </summary>
    public const int Unreachable = 3;

    /// <summary><c>doctor</c>: the ThreadPool is starved.</summary>
    public const int Starved = 4;

    /// <summary>
    /// More than one target could be meant (several processes expose BoundedWork, or one process has several sockets)
    /// and none was named: pick one with <c>-p PID</c> or <c>--socket PATH</c>. Each of them can be reached.
    /// </summary>
    public const int Ambiguous = 5;
}

/// <summary>A failure the tool explains in one message and maps to an exit code; never shown as a stack trace.</summary>
internal sealed class ToolException(int exitCode, string message) : Exception(message)
{
    public int ExitCode { get; } = exitCode;

    public static ToolException Unreachable(string message) => new(ExitCodes.Unreachable, message);

    public static ToolException Ambiguous(string message) => new(ExitCodes.Ambiguous, message);
}
