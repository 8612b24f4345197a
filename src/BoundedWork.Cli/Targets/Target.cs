using System.Diagnostics;
using System.Globalization;

namespace BoundedWork.Cli.Targets;

/// <summary>Picks the socket a command talks to, from <c>--socket</c>, <c>-p PID</c>, or the only one there is.</summary>
internal static class Target
{
    public static AdminSocketClient Resolve(int? processId, string? socket, TimeSpan timeout)
    {
        if (socket is not null)
        {
            return new AdminSocketClient(Path.GetFullPath(socket), timeout);
        }

        var all = SocketDirectory.FindAll();
        if (processId is { } pid)
        {
            var mine = all.Where(e => e.ProcessId == pid).ToList();
            return mine.Count switch
            {
                1 => new AdminSocketClient(mine[0].Path, timeout),
                0 when !IsRunning(pid) => throw ToolException.Unreachable($"No process {pid} is running."),
                0 => throw ToolException.Unreachable(
                    $"Process {pid} has no BoundedWork diagnostics socket under {Path.Combine(SocketDirectory.Root, "boundedwork-*")}. " +
                    "The app turns it on with builder.Services.AddBoundedWorkDiagnosticsSocket() (or names one with --socket PATH). " +
                    Unreadable() +
                    $"Without it, 'bw doctor -p {pid}' and 'bw top -p {pid}' still read the runtime's counters and stacks."),
                _ => throw ToolException.Ambiguous(
                    $"Process {pid} has {mine.Count} BoundedWork sockets (one per host): pick one with --socket:{Environment.NewLine}" +
                    string.Join(Environment.NewLine, mine.Select(e => "  " + e.Path))),
            };
        }

        var live = all.Where(e => IsRunning(e.ProcessId)).ToList();
        return live.Count switch
        {
            1 => new AdminSocketClient(live[0].Path, timeout),
            0 => throw ToolException.Unreachable(
                $"No process on this machine exposes a BoundedWork diagnostics socket (looked in {Path.Combine(SocketDirectory.Root, "boundedwork-*")}). " +
                "The app turns it on with builder.Services.AddBoundedWorkDiagnosticsSocket(); 'bw ps --all' lists every .NET process. " +
                Unreadable()),
            _ => throw ToolException.Ambiguous(
                $"{live.Count} processes expose BoundedWork, so which one is meant is ambiguous (each can be reached): pick one with -p PID (see 'bw ps'): " +
                string.Join(", ", live.Select(e => e.ProcessId.ToString(CultureInfo.InvariantCulture)).Distinct())),
        };
    }

    private static string Unreadable() => SocketDirectory.Unreadable.Count == 0 ? ""
        : $"This user may not read {string.Join(", ", SocketDirectory.Unreadable)} (another user's sockets): run bw as the app's user, or root. ";

    public static bool IsRunning(int processId)
    {
        try
        {
            using var process = Process.GetProcessById(processId);
            return !process.HasExited;
        }
        catch (Exception e) when (e is ArgumentException or InvalidOperationException)
        {
            return false;
        }
    }
}
