using System.Globalization;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// Where <c>AddBoundedWorkDiagnosticsSocket()</c> puts a process's socket: <c>{temp}/boundedwork-{uid}/{pid}.sock</c>
/// on Unix (<c>{temp}</c> is <c>$TMPDIR</c>, else <c>/tmp</c>), <c>%TEMP%\boundedwork\{pid}.sock</c> on Windows, and
/// <c>{pid}-{n}.sock</c> for the n-th host of one process. The folder is the user's own: created owner-only
/// (<c>rwx------</c>), and refused when it is a link, belongs to another user or is open to others. Tools find the
/// sockets by listing <c>{temp}/boundedwork-*</c>, so the layout is part of the documented interface.
/// </summary>
internal static class DiagnosticsSocketPath
{
    public const string FolderPrefix = "boundedwork";

    private static int s_hosts;

    /// <summary>Gets the folder of this user's diagnostics sockets.</summary>
    public static string Folder =>
        Path.Combine(Path.GetTempPath(), SocketFile.CurrentUserId is { } uid ? $"{FolderPrefix}-{uid.ToString(CultureInfo.InvariantCulture)}" : FolderPrefix);

    /// <summary>Makes sure the folder exists and is private, and returns a socket path for one more host of this process.</summary>
    public static string Allocate()
    {
        var folder = Folder;
        EnsurePrivateFolder(folder);
        var host = Interlocked.Increment(ref s_hosts);
        var pid = Environment.ProcessId.ToString(CultureInfo.InvariantCulture);
        return Path.Combine(folder, host == 1 ? $"{pid}.sock" : $"{pid}-{host.ToString(CultureInfo.InvariantCulture)}.sock");
    }

    private static void EnsurePrivateFolder(string folder)
    {
        if (OperatingSystem.IsWindows())
        {
            Directory.CreateDirectory(folder); // under the user's own temp folder
            return;
        }

        if (SocketFile.Inspect(folder).Kind == SocketFileKind.None)
        {
            Directory.CreateDirectory(folder, UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.UserExecute);
        }

        var status = SocketFile.Inspect(folder);
        var problem = status.Kind != SocketFileKind.Directory ? $"it is {status.Describe()}, not a directory"
            : status.OwnerId != SocketFile.CurrentUserId ? $"it belongs to user {status.OwnerId}, not to this process's user"
            : (status.Permissions & 0x3F) != 0 ? $"others may open it (mode {Convert.ToString(status.Permissions, 8)}, not 700)"
            : null;
        if (problem is not null)
        {
            throw new InvalidOperationException(
                $"The BoundedWork diagnostics socket's folder '{folder}' cannot be used: {problem}. Remove it (it is created again, private to this user), or give the app its own temporary folder with TMPDIR.");
        }
    }
}
