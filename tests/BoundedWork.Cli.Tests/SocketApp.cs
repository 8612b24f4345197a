using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;
using Npgsql;

namespace BoundedWork.Cli.Tests;

/// <summary>
/// The app every socket test of the tool starts: a slim web app with the services the test adds, the admin console on
/// a local socket of its own only, and its logs collected.
/// </summary>
internal static class SocketApp
{
    /// <summary>Builds (does not start) the app; <paramref name="tag"/> goes into the socket's file name.</summary>
    public static (WebApplication App, string SocketPath, FakeLogCollector Logs) Build(string tag, Action<IServiceCollection> services)
    {
        var socketPath = Path.Combine(Path.GetTempPath(), $"bw-{tag}-{Guid.NewGuid():N}.sock");
        var logs = new FakeLogCollector();
        // Not the test folder as content root: the sample app's appsettings.json there would configure this app too.
        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { ContentRootPath = AppContext.BaseDirectory + "../" });
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        builder.Logging.ClearProviders();
        builder.Logging.AddProvider(new FakeLoggerProvider(logs));
        services(builder.Services);
        builder.Services.AddBoundedWorkAdmin(o => o.LocalSocketPath = socketPath);
        return (builder.Build(), socketPath, logs);
    }

    /// <summary>A new, empty schema of its own for one app's durable queue; returns its name.</summary>
    public static async Task<string> CreateSchemaAsync(string connectionString)
    {
        var schema = "bw_" + Guid.NewGuid().ToString("N")[..12];
        await using var connection = new NpgsqlConnection(connectionString);
        await connection.OpenAsync();
        await using var create = new NpgsqlCommand($"CREATE SCHEMA {schema}", connection);
        await create.ExecuteNonQueryAsync();
        return schema;
    }
}

/// <summary>
/// A started <see cref="SocketApp"/> as a test holds it: its socket, its logs, <c>bw</c>'s arguments for that socket,
/// and a stop when the test is done.
/// </summary>
public abstract class SocketAppHost : IAsyncDisposable
{
    private protected SocketAppHost(WebApplication app, string socketPath, FakeLogCollector logs)
    {
        App = app;
        SocketPath = socketPath;
        Logs = logs;
    }

    public string SocketPath { get; }

    public FakeLogCollector Logs { get; }

    private protected WebApplication App { get; }

    /// <summary><c>bw</c>'s arguments for this app's socket.</summary>
    public string[] Bw(params string[] args) => [.. args, "--socket", SocketPath];

    public async ValueTask DisposeAsync()
    {
        await App.StopAsync();
        await App.DisposeAsync();
        GC.SuppressFinalize(this);
    }

    /// <summary>Starts <paramref name="host"/>'s app and returns it.</summary>
    private protected static async Task<T> StartedAsync<T>(T host)
        where T : SocketAppHost
    {
        await host.App.StartAsync();
        return host;
    }
}
