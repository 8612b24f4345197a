using System.Net;
using System.Text.Json;
using BoundedWork.AspNetCore.Internal;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// The console's one route table, served by both transports: every route of the table answers on a real Kestrel and on
/// the real local socket with the same status and the same answer, a method it does not take gets the route's own 405
/// on each, and a path no route matches gets 404 on both.
/// </summary>
public sealed class AdminRouteTableTests : IAsyncLifetime
{
    private const string Prefix = "/bounded-work";
    private readonly string _path = Path.Combine(Path.GetTempPath(), $"bw-{Guid.NewGuid():N}.sock");
    private AdminServer _server = null!;
    private AdminRouteTable _table = null!;

    public async Task InitializeAsync()
    {
        _server = await AdminServer.StartAsync(configure: builder =>
        {
            builder.Services.AddSingleton<IDeadLetterStore>(new FakeDeadLetterStore());
            builder.Services.AddBoundedWorkAdmin(o => o.LocalSocketPath = _path);
        });
        var services = _server.App.Services;
        _table = AdminRouteTable.Create(
            services.GetRequiredService<AdminApi>(),
            services.GetRequiredService<DeadLetterApi>(),
            services.GetRequiredService<ClusterApi>(),
            process: static () => throw new InvalidOperationException("Not called: the table is only listed here."),
            schedules: services.GetRequiredService<ScheduleApi>(),
            items: services.GetRequiredService<ItemApi>());
    }

    public async Task DisposeAsync() => await _server.DisposeAsync();

    [Fact]
    public async Task EveryRouteOfBothTransports_AnswersTheSameOnKestrelAndTheSocket()
    {
        var shared = _table.For(AdminTransports.Http).Intersect(_table.For(AdminTransports.LocalSocket)).ToList();
        Assert.Equal(24, _table.Routes.Count);
        Assert.Equal(23, shared.Count); // all but /process, which only the socket serves
        foreach (var route in shared)
        {
            foreach (var operation in route.Operations)
            {
                var target = Target(route);
                var body = operation.ReadsChange ? "{}" : null;
                using var http = await _server.Client.SendChangeAsync(new HttpMethod(operation.Method), Prefix + target, body);
                var socket = LocalSocketClient.Send(_path, operation.Method, target, body);
                var because = $"{operation.Method} {route.Pattern}";

                Assert.True((int)http.StatusCode == socket.Status, $"{because}: HTTP {(int)http.StatusCode}, socket {socket.Status}: {socket.Body}");
                Assert.Equal(http.Content.Headers.ContentType?.ToString(), socket.ContentType);
                var httpJson = await http.JsonAsync(); // a route Kestrel does not map would answer 404 without a body
                if (socket.ContentType.StartsWith("application/problem+json", StringComparison.Ordinal))
                {
                    Assert.DoesNotContain("No console endpoint", socket.Json.GetProperty("detail").GetString(), StringComparison.Ordinal);
                    Assert.Equal(socket.Json.GetProperty("title").GetString(), httpJson.GetProperty("title").GetString());
                    Assert.Equal(socket.Json.GetProperty("detail").GetString(), httpJson.GetProperty("detail").GetString());
                }
                else
                {
                    Assert.Equal(httpJson.ValueKind, socket.Json.ValueKind);
                }
            }
        }
    }

    [Fact]
    public async Task EveryRoute_AMethodItDoesNotTake_Gets405WithItsOwnMethodsOnEachTransport()
    {
        foreach (var route in _table.Routes)
        {
            var target = Target(route);
            if ((route.Transports & AdminTransports.Http) != 0)
            {
                using var http = await _server.Client.SendChangeAsync(new HttpMethod("FROB"), Prefix + target, null);
                Assert.Equal(HttpStatusCode.MethodNotAllowed, http.StatusCode);
                Assert.Equal(route.Allow(AdminTransports.Http), string.Join(", ", http.Content.Headers.Allow));
            }

            var socket = LocalSocketClient.Send(_path, "FROB", target);
            Assert.Equal(405, socket.Status);
            Assert.Equal($"FROB is not allowed on {target}; allowed: {route.Allow(AdminTransports.LocalSocket)}.", socket.Json.GetProperty("detail").GetString());
        }
    }

    [Theory]
    [InlineData("/nothing-here")]
    [InlineData("/executors/payments/workers/more")]
    [InlineData("/queues/payments/dead-letters/1/requeue/more")]
    public async Task UnknownPath_404OnBothTransports_TheSocketListsEveryRouteItServes(string target)
    {
        using var http = await _server.Client.GetAsync(Prefix + target);
        var socket = LocalSocketClient.Send(_path, "GET", target);

        Assert.Equal(HttpStatusCode.NotFound, http.StatusCode);
        Assert.Equal(404, socket.Status);
        var detail = socket.Json.GetProperty("detail").GetString();
        Assert.StartsWith($"No console endpoint at '{target}'; the socket serves ", detail, StringComparison.Ordinal);
        Assert.All(_table.For(AdminTransports.LocalSocket), route => Assert.Contains(route.Pattern, detail, StringComparison.Ordinal));
        Assert.Equal(
            $"No console endpoint at '{target}'; the socket serves /executors, /executors/{{name}}, /executors/{{name}}/workers, /executors/{{name}}/pause, /executors/{{name}}/resume, /threadpool, /process, /queues/{{name}}/dead-letters, /queues/{{name}}/dead-letters/{{id}}, /queues/{{name}}/dead-letters/{{id}}/requeue, /queues/{{name}}/dead-letters/requeue, /queues/{{name}}/dead-letters/purge, /queues/{{name}}/cluster, /queues/{{name}}/pause, /queues/{{name}}/resume, /schedules, /schedules/{{name}}, /schedules/{{name}}/trigger, /durable-schedules, /durable-schedules/{{name}}, /durable-schedules/{{name}}/trigger, /queues/{{name}}/items, /queues/{{name}}/items/preview and /queues/{{name}}/items/apply.",
            detail);
    }

    /// <summary>A path of <paramref name="route"/>: executor and queue <c>payments</c>, a dead letter that is not there.</summary>
    private static string Target(AdminRoute route) =>
        route.Pattern.Replace("{name}", "payments", StringComparison.Ordinal).Replace("{id}", "987654321", StringComparison.Ordinal);
}
