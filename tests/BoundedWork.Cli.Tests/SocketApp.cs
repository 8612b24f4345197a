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
