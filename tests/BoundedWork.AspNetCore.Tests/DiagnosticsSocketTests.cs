using System.Runtime.Versioning;
using BoundedWork.AspNetCore.Internal;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// AddBoundedWorkDiagnosticsSocket(): the per-process socket the incident tool finds. In the collection that runs
/// alone, because one test points TMPDIR elsewhere for the whole process.
/// </summary>
[Collection(StarvationCollection.Name)]
[UnsupportedOSPlatform("windows")]
public sealed class DiagnosticsSocketTests
{
    [Fact]
    public async Task DiagnosticsSocket_OneCall_PerProcessPathInAPrivateFolder_RemovedAtStop()
    {
        var server = await StartAsync();
        string path;
        try
        {
            path = SocketPathOf(server);
            var folder = Path.GetDirectoryName(path)!;

            Assert.Equal(Path.Combine(Path.GetTempPath(), $"boundedwork-{SocketFile.CurrentUserId}"), folder);
            Assert.Matches($"^{Environment.ProcessId}(-[0-9]+)?\\.sock$", Path.GetFileName(path));
            Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.UserExecute, File.GetUnixFileMode(folder));
            Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite, File.GetUnixFileMode(path));

            var process = LocalSocketClient.Send(path, "GET", "/process");
            Assert.Equal(200, process.Status);
            Assert.Equal(Environment.ProcessId, process.Json.GetProperty("processId").GetInt32());
            Assert.Equal(path, process.Json.GetProperty("socket").GetString());
            Assert.Equal(["payments", "mail"], process.Json.GetProperty("executors").EnumerateArray().Select(e => e.GetString()));
            Assert.Equal(200, LocalSocketClient.Send(path, "GET", "/executors").Status);
        }
        finally
        {
            await server.DisposeAsync();
        }

        Assert.False(File.Exists(path));
    }

    [Fact]
    public async Task DiagnosticsSocket_TwoHostsInOneProcess_EachGetsItsOwnSocket()
    {
        await using var first = await StartAsync();
        await using var second = await StartAsync();

        var (a, b) = (SocketPathOf(first), SocketPathOf(second));

        Assert.NotEqual(a, b);
        Assert.Equal(200, LocalSocketClient.Send(a, "GET", "/threadpool").Status);
        Assert.Equal(200, LocalSocketClient.Send(b, "GET", "/threadpool").Status);
    }

    [Theory]
    [InlineData("open to others")]
    [InlineData("a link")]
    public async Task DiagnosticsSocket_FolderNotPrivate_StartFailsNamingTheFolder(string problem)
    {
        var temp = Directory.CreateTempSubdirectory("bw-tmpdir-").FullName;
        var folder = Path.Combine(temp, $"boundedwork-{SocketFile.CurrentUserId}");
        if (problem == "a link")
        {
            Directory.CreateDirectory(Path.Combine(temp, "elsewhere"));
            File.CreateSymbolicLink(folder, Path.Combine(temp, "elsewhere"));
        }
        else
        {
            Directory.CreateDirectory(folder, (UnixFileMode)0x1FF);
            File.SetUnixFileMode(folder, (UnixFileMode)0x1FF); // rwxrwxrwx, whatever the umask
        }

        var previous = Environment.GetEnvironmentVariable("TMPDIR");
        Environment.SetEnvironmentVariable("TMPDIR", temp);
        try
        {
            var error = await Assert.ThrowsAsync<InvalidOperationException>(StartAsync);

            Assert.Contains(folder, error.Message, StringComparison.Ordinal);
            Assert.Empty(Directory.GetFiles(Path.Combine(temp, problem == "a link" ? "elsewhere" : Path.GetFileName(folder))));
        }
        finally
        {
            Environment.SetEnvironmentVariable("TMPDIR", previous);
            Directory.Delete(temp, recursive: true);
        }
    }

    private static Task<AdminServer> StartAsync() =>
        AdminServer.StartAsync(configure: b => b.Services.AddBoundedWorkDiagnosticsSocket());

    private static string SocketPathOf(AdminServer server) =>
        Assert.Single(server.Logs.WithEvent("LocalSocketListening")).GetStructuredStateValue("SocketPath")!;
}
