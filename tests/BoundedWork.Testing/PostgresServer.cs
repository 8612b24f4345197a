using System.Diagnostics;
using System.Globalization;

namespace BoundedWork.Testing;

/// <summary>
/// A real PostgreSQL server for tests: a fresh cluster (initdb) in a temporary folder, listening on a Unix socket in
/// that folder only (no TCP port, so parallel runs cannot collide), started and stopped with pg_ctl. Runs the server
/// as the <c>postgres</c> user when the tests run as root (PostgreSQL refuses to run as root).
/// </summary>
public sealed class PostgresServer : IAsyncDisposable
{
    private const int Port = 5432;
    private readonly string _bin;
    private readonly string _root;
    private readonly string[] _settings;
    private bool _stopped = true;

    private PostgresServer(string bin, string root, string[] settings)
    {
        _bin = bin;
        _root = root;
        _settings = settings;
    }

    /// <summary>Gets the folder of the server's Unix socket.</summary>
    public string SocketDirectory => Path.Combine(_root, "socket");

    /// <summary>Gets the cluster's folder (data directory, socket folder and server log), deleted when the server is disposed.</summary>
    public string RootDirectory => _root;

    /// <summary>Gets the cluster's data directory (what <c>pg_ctl -D</c> takes).</summary>
    public string DataDirectory => Path.Combine(_root, "data");

    /// <summary>Gets a connection string for the superuser on the <c>postgres</c> database.</summary>
    public string ConnectionString => string.Create(CultureInfo.InvariantCulture,
        $"Host={SocketDirectory};Port={Port};Username=postgres;Database=postgres;Timeout=5;Command Timeout=60;Maximum Pool Size=40");

    private string LogFile => Path.Combine(_root, "server.log");

    private static bool IsRoot => Environment.UserName == "root";

    /// <summary>Creates a cluster and starts it.</summary>
    /// <param name="settings">
    /// Extra server settings as <c>name=value</c>, given after the defaults (so they win): for example <c>fsync=on</c>
    /// for durable numbers in a benchmark. The tests pass none: <c>fsync=off</c>.
    /// </param>
    public static async Task<PostgresServer> StartAsync(params string[] settings)
    {
        var root = Path.Combine(Path.GetTempPath(), "boundedwork-pg-" + Guid.NewGuid().ToString("N")[..12]);
        Directory.CreateDirectory(Path.Combine(root, "data"));
        Directory.CreateDirectory(Path.Combine(root, "socket"));
        if (IsRoot)
        {
            await RunAsync("chown", ["-R", "postgres:postgres", root]);
        }

        var server = new PostgresServer(FindBin(), root, settings);
        try
        {
            await server.PgAsync("initdb", ["-D", server.DataDirectory, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
            await server.StartServerAsync();
            return server;
        }
        catch
        {
            await server.DisposeAsync();
            throw;
        }
    }

    /// <summary>Stops the server the hard way (as a crash would: no checkpoint, crash recovery on start) and starts it again.</summary>
    public async Task RestartAsync(Func<Task>? whileDown = null)
    {
        await StopServerAsync("immediate");
        if (whileDown is not null)
        {
            await whileDown();
        }

        await StartServerAsync();
    }

    /// <summary>Stops the server (fast shutdown: sessions are disconnected).</summary>
    public Task StopAsync() => StopServerAsync("fast");

    /// <summary>Starts a stopped server.</summary>
    public Task StartAgainAsync() => StartServerAsync();

    public async ValueTask DisposeAsync()
    {
        try
        {
            await StopServerAsync("immediate");
        }
        catch (InvalidOperationException)
        {
            // Already down.
        }

        try
        {
            Directory.Delete(_root, recursive: true);
        }
        catch (IOException)
        {
        }
        catch (UnauthorizedAccessException)
        {
        }
    }

    private static string FindBin()
    {
        if (Environment.GetEnvironmentVariable("BOUNDEDWORK_PG_BIN") is { Length: > 0 } configured)
        {
            return configured;
        }

        var installed = Directory.Exists("/usr/lib/postgresql")
            ? Directory.GetDirectories("/usr/lib/postgresql").Select(d => Path.Combine(d, "bin")).Where(d => File.Exists(Path.Combine(d, "pg_ctl")))
                .OrderByDescending(d => int.TryParse(Path.GetFileName(Path.GetDirectoryName(d)), out var v) ? v : 0).FirstOrDefault()
            : null;
        return installed ?? throw new InvalidOperationException(
            "PostgreSQL server binaries were not found under /usr/lib/postgresql/*/bin; install Debian's postgresql package or set BOUNDEDWORK_PG_BIN.");
    }

    private async Task StartServerAsync()
    {
        var options = $"-c listen_addresses='' -k {SocketDirectory} -p {Port} -c fsync=off -c max_connections=300 -c shared_buffers=128MB";
        foreach (var setting in _settings)
        {
            options += " -c " + setting;
        }

        await PgAsync("pg_ctl", ["-D", DataDirectory, "-l", LogFile, "-w", "-t", "60", "-o", options, "start"]);
        _stopped = false;
    }

    private async Task StopServerAsync(string mode)
    {
        if (_stopped)
        {
            return;
        }

        await PgAsync("pg_ctl", ["-D", DataDirectory, "-m", mode, "-w", "-t", "60", "stop"]);
        _stopped = true;
    }

    private Task PgAsync(string tool, string[] arguments)
    {
        var path = Path.Combine(_bin, tool);
        return IsRoot ? RunAsync("runuser", ["-u", "postgres", "--", path, .. arguments]) : RunAsync(path, arguments);
    }

    private static async Task RunAsync(string file, string[] arguments)
    {
        var start = new ProcessStartInfo(file)
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (var argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        using var process = Process.Start(start) ?? throw new InvalidOperationException($"Could not start {file}.");
        var output = process.StandardOutput.ReadToEndAsync();
        var error = process.StandardError.ReadToEndAsync();
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(2));
        await process.WaitForExitAsync(timeout.Token);
        if (process.ExitCode != 0)
        {
            throw new InvalidOperationException($"{file} {string.Join(' ', arguments)} exited with {process.ExitCode}: {await output}{await error}");
        }
    }
}
