using System.Collections.Concurrent;
using System.Diagnostics.Metrics;
using System.Net.Http.Headers;
using System.Security.Claims;
using System.Text;
using System.Text.Encodings.Web;
using System.Text.Json;
using BoundedWork.Hosting;
using Microsoft.AspNetCore.Authentication;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace BoundedWork.AspNetCore.Tests;

public static class TestKit
{
    /// <summary>A generous safety limit for waits that normally end in milliseconds; never a pass condition.</summary>
    public static readonly TimeSpan Safety = TimeSpan.FromSeconds(30);

    public const string AdminHeader = "X-BoundedWork-Admin";
}

/// <summary>
/// Authenticates from request headers: <c>X-Test-User</c> names the user (percent-encoded), <c>X-Test-Roles</c> lists roles. No header:
/// not authenticated (401 on a protected endpoint); authenticated without the role: 403.
/// </summary>
public sealed class HeaderAuthenticationHandler(IOptionsMonitor<AuthenticationSchemeOptions> options, ILoggerFactory logger, UrlEncoder encoder)
    : AuthenticationHandler<AuthenticationSchemeOptions>(options, logger, encoder)
{
    public const string SchemeName = "TestHeaders";

    protected override Task<AuthenticateResult> HandleAuthenticateAsync()
    {
        var user = Uri.UnescapeDataString(Request.Headers["X-Test-User"].ToString()); // percent-encoded, so tests can send any name
        if (user.Length == 0)
        {
            return Task.FromResult(AuthenticateResult.NoResult());
        }

        var claims = new List<Claim> { new(ClaimTypes.Name, user) };
        claims.AddRange(Request.Headers["X-Test-Roles"].ToString().Split(',', StringSplitOptions.RemoveEmptyEntries).Select(r => new Claim(ClaimTypes.Role, r)));
        var principal = new ClaimsPrincipal(new ClaimsIdentity(claims, SchemeName));
        return Task.FromResult(AuthenticateResult.Success(new AuthenticationTicket(principal, SchemeName)));
    }

    protected override Task HandleChallengeAsync(AuthenticationProperties properties)
    {
        Response.Headers.WWWAuthenticate = SchemeName;
        return base.HandleChallengeAsync(properties);
    }
}

/// <summary>
/// A real Kestrel server on 127.0.0.1, port 0, with two executors (payments: 2 workers of at most 8, queue 100;
/// mail: 1 worker of at most 4), header authentication, the <c>BoundedWorkAdmin</c> policy (role <c>ops</c>) and the
/// console at <c>/bounded-work</c>. The client signs in as alice, an operator, unless told otherwise.
/// </summary>
public sealed class AdminServer : IAsyncDisposable
{
    private AdminServer(WebApplication app, FakeLogCollector logs)
    {
        App = app;
        Logs = logs;
        BaseAddress = new Uri(app.Urls.Single());
        Client = CreateClient("alice", "ops");
    }

    public WebApplication App { get; }

    public FakeLogCollector Logs { get; }

    public Uri BaseAddress { get; }

    public HttpClient Client { get; }

    public BoundedExecutor Payments => Executor("payments");

    public static async Task<AdminServer> StartAsync(
        bool anonymous = false,
        Action<WebApplicationBuilder>? configure = null,
        Action<IServiceCollection>? executors = null,
        Action<IServiceCollection>? authentication = null,
        Action<WebApplication>? map = null)
    {
        var logs = new FakeLogCollector();
        var app = Build(logs, anonymous, configure, executors, authentication: authentication, map: map);
        try
        {
            await app.StartAsync();
        }
        catch
        {
            await app.DisposeAsync();
            throw;
        }

        return new AdminServer(app, logs);
    }

    public static WebApplication Build(
        FakeLogCollector logs,
        bool anonymous = false,
        Action<WebApplicationBuilder>? configure = null,
        Action<IServiceCollection>? executors = null,
        bool addPolicy = true,
        bool addAdmin = true,
        Action<IServiceCollection>? authentication = null,
        Action<WebApplication>? map = null)
    {
        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { EnvironmentName = "Development" });
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        builder.Logging.ClearProviders();
        builder.Logging.SetMinimumLevel(LogLevel.Debug);
        builder.Logging.AddProvider(new FakeLoggerProvider(logs));
        if (authentication is null)
        {
            builder.Services.AddAuthentication(HeaderAuthenticationHandler.SchemeName)
                .AddScheme<AuthenticationSchemeOptions, HeaderAuthenticationHandler>(HeaderAuthenticationHandler.SchemeName, null);
        }
        else
        {
            authentication(builder.Services);
        }

        builder.Services.AddAuthorization(options =>
        {
            if (addPolicy)
            {
                options.AddPolicy("BoundedWorkAdmin", policy => policy.RequireRole("ops"));
            }
        });

        if (executors is null)
        {
            builder.Services.AddBoundedExecutor("payments", o =>
            {
                o.WorkerCount = 2;
                o.MaxWorkerCount = 8;
                o.QueueCapacity = 100;
                o.RejectionPolicy = RejectionPolicy.Abort;
                o.WaitTimeout = TimeSpan.FromSeconds(5);
            });
            builder.Services.AddBoundedExecutor("mail", o =>
            {
                o.WorkerCount = 1;
                o.MaxWorkerCount = 4;
                o.QueueCapacity = 10;
            });
        }
        else
        {
            executors(builder.Services);
        }

        if (addAdmin)
        {
            builder.Services.AddBoundedWorkAdmin();
        }

        configure?.Invoke(builder);
        var app = builder.Build();
        app.UseAuthentication();
        app.UseAuthorization();
        var console = app.MapBoundedWorkAdmin();
        if (anonymous)
        {
            console.AllowAnonymousAdmin();
        }

        map?.Invoke(app);
        return app;
    }

    public BoundedExecutor Executor(string name) => App.Services.GetRequiredService<IBoundedExecutorRegistry>().GetExecutor(name);

    public HttpClient CreateClient(string? user, string? roles)
    {
        var client = new HttpClient { BaseAddress = BaseAddress };
        if (user is not null)
        {
            client.DefaultRequestHeaders.Add("X-Test-User", user);
        }

        if (roles is not null)
        {
            client.DefaultRequestHeaders.Add("X-Test-Roles", roles);
        }

        return client;
    }

    public async ValueTask DisposeAsync()
    {
        Client.Dispose();
        await App.StopAsync();
        await App.DisposeAsync();
    }
}

/// <summary>
/// Records every measurement of the <c>BoundedWork.Admin</c> meter of one host (its <see cref="IMeterFactory"/>): the
/// instrument, the value, the executor tag and the setting, reason or operation tag. Kept rather than
/// <c>MetricCollector&lt;T&gt;</c>, which follows one instrument: the tests read every instrument of the meter in order.
/// </summary>
public sealed class AdminMeterRecorder : IDisposable
{
    private readonly ConcurrentQueue<(string Instrument, long Value, string? Executor, string? Setting)> _measurements = new();
    private readonly MeterListener _listener = new();

    public AdminMeterRecorder(IServiceProvider services)
    {
        var scope = services.GetRequiredService<IMeterFactory>();
        _listener.InstrumentPublished = (instrument, listener) =>
        {
            if (instrument.Meter.Name == "BoundedWork.Admin" && ReferenceEquals(instrument.Meter.Scope, scope))
            {
                listener.EnableMeasurementEvents(instrument);
            }
        };
        _listener.SetMeasurementEventCallback<long>((instrument, value, tags, _) =>
        {
            string? executor = null, setting = null;
            foreach (var tag in tags)
            {
                if (tag.Key == "boundedwork.executor")
                {
                    executor = (string?)tag.Value;
                }
                else if (tag.Key is "boundedwork.setting" or "boundedwork.reason" or "boundedwork.operation")
                {
                    setting = (string?)tag.Value;
                }
            }

            _measurements.Enqueue((instrument.Name, value, executor, setting));
        });
        _listener.Start();
    }

    public (string Instrument, long Value, string? Executor, string? Setting)[] Measurements => [.. _measurements];

    public void Dispose() => _listener.Dispose();
}

public static class HttpExtensions
{
    /// <summary>Sends a change the way the dashboard does: JSON with the console's request header.</summary>
    public static Task<HttpResponseMessage> SendChangeAsync(this HttpClient client, HttpMethod method, string path, string? json, string contentType = "application/json", bool header = true)
    {
        var request = new HttpRequestMessage(method, path);
        if (json is not null)
        {
            request.Content = new StringContent(json, Encoding.UTF8);
            request.Content.Headers.ContentType = MediaTypeHeaderValue.Parse(contentType);
        }

        if (header)
        {
            request.Headers.Add(TestKit.AdminHeader, "1");
        }

        return client.SendAsync(request);
    }

    /// <summary>Sends a change whose body is exactly <paramref name="body"/> (which need not be valid UTF-8), with the JSON content type and the console's header.</summary>
    public static Task<HttpResponseMessage> SendRawChangeAsync(this HttpClient client, HttpMethod method, string path, byte[] body)
    {
        var request = new HttpRequestMessage(method, path) { Content = new ByteArrayContent(body) };
        request.Content.Headers.ContentType = MediaTypeHeaderValue.Parse("application/json");
        request.Headers.Add(TestKit.AdminHeader, "1");
        return client.SendAsync(request);
    }

    public static async Task<JsonElement> JsonAsync(this HttpResponseMessage response)
    {
        var text = await response.Content.ReadAsStringAsync();
        return JsonDocument.Parse(text).RootElement.Clone();
    }
}
