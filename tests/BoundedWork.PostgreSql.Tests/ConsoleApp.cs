using System.Security.Claims;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The operator's app of the console tests over a real PostgreSQL queue: the queue <c>notices</c> on real Kestrel (a
/// free port) with the admin console, its caller signed in as alice when <paramref name="signedInAs"/> says so.
/// </summary>
internal static class ConsoleApp
{
    public static async Task<WebApplication> StartAsync(
        PostgresFixture postgres,
        string schema,
        ILoggerProvider? logs = null,
        string? signedInAs = "alice",
        Behavior? behavior = null,
        Action<WorkQueueOptions<Notice>>? queue = null,
        Action<PostgreSqlWorkQueueOptions<Notice>>? storage = null,
        Action<BoundedExecutorOptions>? executor = null,
        Action<IServiceCollection>? services = null)
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        builder.Logging.ClearProviders();
        if (logs is not null)
        {
            builder.Logging.AddProvider(logs);
        }

        builder.Services.AddAuthorization();
        builder.Services.AddSingleton(behavior ?? new Behavior());
        builder.Services.AddSingleton(new QueueNode.NodeName("web"));
        services?.Invoke(builder.Services);
        var queueBuilder = builder.Services
            .AddWorkQueue<Notice, TestHandler>("notices", o => queue?.Invoke(o))
            .UsePostgreSql(postgres.ConnectionString, NoticeJson.Default.Notice, o =>
            {
                o.Schema = schema;
                o.Consume = false;
                storage?.Invoke(o);
            });
        if (executor is not null)
        {
            queueBuilder.Configure(executor);
        }

        builder.Services.AddBoundedWorkAdmin();
        var app = builder.Build();
        if (signedInAs is not null)
        {
            app.Use((context, next) =>
            {
                context.User = new ClaimsPrincipal(new ClaimsIdentity([new Claim(ClaimTypes.Name, signedInAs)], "test"));
                return next(context);
            });
        }

        app.UseAuthorization();
        app.MapBoundedWorkAdmin().AllowAnonymousAdmin();
        await app.StartAsync();
        return app;
    }
}
