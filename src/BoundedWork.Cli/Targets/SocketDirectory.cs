using System.Globalization;

namespace BoundedWork.Cli.Targets;

/// <summary>A diagnostics socket found on this machine: the process id and host number its name carries, and its path.</summary>
internal sealed record SocketEntry(int ProcessId, int Host, string Path);

/// <summary>
/// Finds the sockets <c>AddBoundedWorkDiagnosticsSocket()</c> creates: <c>{temp}/boundedwork-{uid}/{pid}.sock</c>
/// (and <c>{pid}-{n}.sock</c>), in every user's folder this user may read (so root sees every app's). <c>{temp}</c> is
/// <c>$TMPDIR</c>, else <c>/tmp</c>: run the tool with the app's <c>TMPDIR</c>, as <c>kubectl exec</c> and
/// <c>docker exec</c> do, or name the socket with <c>--socket</c>.
/// </summary>
internal static class SocketDirectory
{
    public static string Root => Path.GetTempPath();

    /// <summary>Gets the socket folders of other users that this user may not read, as of the last <see cref="FindAll"/>.</summary>
    public static IReadOnlyList<string> Unreadable { get; private set; } = [];

    public static IReadOnlyList<SocketEntry> FindAll()
    {
        var found = new List<SocketEntry>();
        var unreadable = new List<string>();
        Unreadable = unreadable;
        string[] folders;
        try
        {
            folders = Directory.GetDirectories(Root, "boundedwork*");
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            return found;
        }

        foreach (var folder in folders)
        {
            try
            {
                foreach (var file in Directory.GetFiles(folder, "*.sock"))
                {
                    if (Parse(file) is { } entry)
                    {
                        found.Add(entry);
                    }
                }
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                unreadable.Add(folder); // another user's folder: not ours to read
            }
        }

        return [.. found.OrderBy(e => e.ProcessId).ThenBy(e => e.Host)];
    }

    public static SocketEntry? Parse(string path)
    {
        var name = Path.GetFileNameWithoutExtension(path);
        var dash = name.IndexOf('-', StringComparison.Ordinal);
        var (pidText, hostText) = dash < 0 ? (name, "1") : (name[..dash], name[(dash + 1)..]);
        return int.TryParse(pidText, NumberStyles.None, CultureInfo.InvariantCulture, out var pid)
            && int.TryParse(hostText, NumberStyles.None, CultureInfo.InvariantCulture, out var host)
            ? new SocketEntry(pid, host, path)
            : null;
    }
}
